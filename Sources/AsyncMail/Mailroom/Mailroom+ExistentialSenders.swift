// A sender written as an existential at the call site, `post(mail, from: id as any Hashable &
// Sendable)`, is not opened into the generic `some Hashable & Sendable` form (an explicit `as`
// keeps the box closed), and used to fail with the message meant for a sender that is neither an
// object nor Hashable. These take the box as it is; routing looks inside it, so the mail reaches
// exactly the subscriptions it would reach posted from the value itself. Disfavored, as the
// unavailable catch-alls are, so that a concrete sender still takes its generic form.
extension Mailroom {
    /// Posts mail from a sender in an existential box, such as `id as any Hashable & Sendable`:
    /// routed as if posted from the value inside.
    ///
    /// ```swift
    /// await mailroom.post(ChatLine(text: "hi"), from: RoomID("lobby") as any Hashable & Sendable)
    /// ```
    ///
    /// - Returns: How many subscriptions received the mail and how many lost one to a full buffer.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(_ mail: M, from sender: any Hashable & Sendable) async -> Receipt
    {
        _switchboard.post(mail, from: sender)
    }

    /// Posts a batch of mail from a sender in an existential box: routed as if posted from the
    /// value inside.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: any Hashable & Sendable
    ) async -> Receipt {
        _switchboard.post(contentsOf: mails, from: sender)
    }

    /// Posts mail from a sender in an existential box, from code that cannot `await`: routed as
    /// if posted from the value inside.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(_ mail: M, from sender: any Hashable & Sendable) -> Receipt {
        _switchboard.post(mail, from: sender)
    }

    /// Posts a batch of mail from a sender in an existential box, from code that cannot `await`.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: any Hashable & Sendable
    ) -> Receipt {
        _switchboard.post(contentsOf: mails, from: sender)
    }

    /// Posts mail from an optional sender in an existential box, `(any Hashable & Sendable)?`:
    /// routed as if posted from the value inside, or with no sender when it is `nil`.
    ///
    /// ```swift
    /// let room: (any Hashable & Sendable)? = RoomID("lobby")
    /// await mailroom.post(ChatLine(text: "hi"), from: room)
    /// ```
    ///
    /// - Returns: How many subscriptions received the mail and how many lost one to a full buffer.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(
        _ mail: M,
        from sender: some _OptionalExistentialSender
    ) async -> Receipt {
        _switchboard.post(mail, from: sender)
    }

    /// Posts a batch of mail from an optional sender in an existential box: routed as if posted
    /// from the value inside, or with no sender when it is `nil`.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: some _OptionalExistentialSender
    ) async -> Receipt {
        _switchboard.post(contentsOf: mails, from: sender)
    }

    /// Posts mail from an optional sender in an existential box, from code that cannot `await`.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(
        _ mail: M,
        from sender: some _OptionalExistentialSender
    ) -> Receipt {
        _switchboard.post(mail, from: sender)
    }

    /// Posts a batch of mail from an optional sender in an existential box, from code that cannot
    /// `await`.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: some _OptionalExistentialSender
    ) -> Receipt {
        _switchboard.post(contentsOf: mails, from: sender)
    }
}
