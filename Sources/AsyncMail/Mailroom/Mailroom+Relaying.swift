// What a relay needs to give a type positions across a fleet: the relay routes every post of the
// type through its table, and posts what it reads back with the positions the table gave. SPI,
// so that only AsyncMail's own relays use it; each call is documented where it is declared.
extension Mailroom {
    /// Makes a relay take every post of `M` (`route`), or stops it (nil).
    ///
    /// `route` is called with the post's mails, in the order every tap hears posts, before any
    /// subscriber hears them; true means the relay took the post and will deliver it with
    /// ``_postPositioned(contentsOf:from:epoch:first:live:)``. False (the relay cannot carry it)
    /// delivers it here at once, without a position: to the subscriptions without positions only,
    /// and not kept in the history. Stopping starts a new epoch of this
    /// mailroom's own and drops what is kept, since the relay's positions go on without it.
    @_spi(AsyncMailInternal)
    public nonisolated func _route<M: Mail>(_ type: M.Type, through route: (@Sendable ([PostedMail]) -> Bool)?) {
        _switchboard.route(M.self, through: route)
    }

    /// Makes every asynchronous post run inside `admission`, until the returned key is passed to
    /// ``_stopAdmitting(_:)``: a relay's backpressure, which holds a post of a relayed type while
    /// its outbound queue is full.
    ///
    /// `admission` gets the post's mail type, its sender as posted (an object, a value, or nil),
    /// and the post; it may wait, then must run the post once and return its receipt. The post
    /// runs on the caller's task, so a task-local value the admission binds is visible to the
    /// relay's tap filter as the post passes it. Synchronous posts never wait: they are not
    /// admitted here.
    @_spi(AsyncMailInternal)
    public nonisolated func _admitPosts(
        through admission:
            nonisolated(nonsending) @escaping @Sendable (
                _ type: ObjectIdentifier,
                _ sender: (any Sendable)?,
                _ post: nonisolated(nonsending) () async -> Receipt
            ) async -> Receipt
    ) -> Int {
        _switchboard._admissions.add(admission)
    }

    /// Runs `post`, an asynchronous post of `M` from `sender`, inside the admissions a relay
    /// registered; one atomic load while there are none. The sender is boxed only then: boxing
    /// it for every post cost posts from objects measurably (`Benchmarks/README.md`).
    @inlinable
    nonisolated(nonsending) func _admitted<M: Mail>(
        _ type: M.Type,
        from sender: @autoclosure () -> (any Sendable)?,
        _ post: () -> Receipt
    ) async -> Receipt {
        guard _switchboard._admissions.isActive else { return post() }
        return await _switchboard._admissions.admit(ObjectIdentifier(M.self), sender(), post)
    }

    /// Stops an admission ``_admitPosts(through:)`` registered; posts inside it finish there.
    @_spi(AsyncMailInternal)
    public nonisolated func _stopAdmitting(_ key: Int) {
        _switchboard._admissions.remove(key)
    }

    /// Posts mails whose positions a relay's table gave: `first`, `first + 1`, … in `epoch`.
    ///
    /// Mails the history already has (the same row read twice) are skipped; a hole before
    /// `first`, or another epoch, drops what is kept, so that a resume from before it is told
    /// exactly how many it missed. With `mails` empty it only moves the history on to `first`
    /// (the table's newest position, plus one). With `live` false the mails are kept for resumes
    /// and yielded to nobody: a relay filling the history as it starts.
    @_spi(AsyncMailInternal)
    @discardableResult
    public nonisolated func _postPositioned<M: Mail>(
        contentsOf mails: [M],
        from sender: (any Hashable & Sendable)?,
        epoch: UInt64,
        first: UInt64,
        live: Bool
    ) -> Receipt {
        guard let sender else {
            return _switchboard.postPositioned(mails, from: Never?.none, epoch: epoch, first: first, live: live)
        }
        return _postPositioned(mails, openedFrom: sender, epoch: epoch, first: first, live: live)
    }

    /// The limits of `M`'s history, if it keeps one: what a relay fills it with as it starts.
    @_spi(AsyncMailInternal)
    public nonisolated func _historyLimits<M: Mail>(_ type: M.Type) -> (count: Int?, maxAge: Duration?)? {
        _switchboard.historyLimits(M.self)
    }

    private nonisolated func _postPositioned<M: Mail, S: Hashable & Sendable>(
        _ mails: [M],
        openedFrom sender: S,
        epoch: UInt64,
        first: UInt64,
        live: Bool
    ) -> Receipt {
        _switchboard.postPositioned(mails, from: sender, epoch: epoch, first: first, live: live)
    }
}
