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
