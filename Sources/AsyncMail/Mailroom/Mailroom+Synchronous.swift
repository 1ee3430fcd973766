extension Mailroom {
    // Posting from code that cannot `await`: a SwiftNIO channel handler, a C or Objective-C
    // callback, a `deinit`. Each form does exactly what its `post` twin does, in the same one
    // order, and returns the same `Receipt`; from async code, use `post`, which never suspends
    // either.

    /// Posts mail with no sender from synchronous code, in the same one order as every post.
    ///
    /// Use it where you cannot `await`: a SwiftNIO `channelRead`, a callback, a `deinit`. It
    /// behaves exactly like ``post(_:)``: delivery happens before it returns, it never waits for
    /// a consumer, and the ``Receipt`` counts what happened. It holds the lanes of the post's
    /// type and room for the length of the delivery, as every post does, so it may briefly wait
    /// for a post in progress on another thread that its subscribers also hear (see the
    /// *Architecture* article: posts to rooms nobody hears together share no lane).
    ///
    /// Called while this thread is delivering another post of the same mailroom (from a `where:`
    /// filter, or from the deinit of a mail released during delivery), it cannot be delivered in
    /// the middle of that post without breaking the order its subscribers share, so it is deferred: it returns a
    /// receipt with `deferred: 1` and is delivered right after the post in progress.
    ///
    /// ```swift
    /// final class Connection {
    ///     let mailroom: Mailroom
    ///     init(mailroom: Mailroom) { self.mailroom = mailroom }
    ///     deinit { mailroom.postSynchronously(Disconnected()) }
    /// }
    /// ```
    @discardableResult
    @inlinable
    public nonisolated func postSynchronously<M: Mail>(_ mail: M) -> Receipt {
        _switchboard.post(mail)
    }

    /// Posts mail from an object or actor from synchronous code; routed exactly like ``post(_:from:)``.
    @discardableResult
    @inlinable
    public nonisolated func postSynchronously<M: Mail>(_ mail: M, from sender: (some AnyObject & Sendable)?) -> Receipt
    {
        _switchboard.post(mail, fromObject: sender)
    }

    /// Posts mail from a `Hashable` sender value from synchronous code; routed exactly like
    /// ``post(_:from:)``.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(_ mail: M, from sender: some Hashable & Sendable) -> Receipt {
        _switchboard.post(mail, fromValue: sender)
    }

    /// Posts a batch of mail with no sender from synchronous code, as one delivery, exactly like
    /// ``post(contentsOf:)``.
    @discardableResult
    @inlinable
    public nonisolated func postSynchronously<M: Mail>(contentsOf mails: some Sequence<M> & Sendable) -> Receipt {
        _switchboard.post(contentsOf: mails)
    }

    /// Posts a batch of mail from one object or actor from synchronous code, as one delivery,
    /// exactly like ``post(contentsOf:from:)``.
    @discardableResult
    @inlinable
    public nonisolated func postSynchronously<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: (some AnyObject & Sendable)?
    ) -> Receipt {
        _switchboard.post(contentsOf: mails, fromObject: sender)
    }

    /// Posts a batch of mail from one `Hashable` sender value from synchronous code, as one
    /// delivery, exactly like ``post(contentsOf:from:)``.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: some Hashable & Sendable
    ) -> Receipt {
        _switchboard.post(contentsOf: mails, from: sender)
    }
}
