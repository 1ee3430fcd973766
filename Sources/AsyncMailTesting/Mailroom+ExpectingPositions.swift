import AsyncMail
import Testing

extension Mailroom {
    /// Resumes after `position`, runs `action`, then returns the first `count` mails of type `M`
    /// with their positions, waiting for them up to `limit`: ``expectMail(_:count:from:within:sourceLocation:during:)``
    /// for a type that keeps history.
    ///
    /// The subscription is made with `subscribe(to:from:after:)` before `action` runs, so what it
    /// returns is what a client that comes back with `position` gets: the kept mail after it, in
    /// order, then what `action` posts. `nil` starts live, as it does there.
    ///
    /// Records one `Issue` at `sourceLocation` when the history no longer reaches `position` (the
    /// resumption's gap, with what was missed), when fewer than `count` arrive within `limit`, or
    /// when more than `count` came by then; it returns what arrived either way. Throws what
    /// `subscribe(to:from:after:)` throws for a position it refuses (`PositionError`), and what
    /// `action` throws.
    ///
    /// ```swift
    /// let resumed = try await mailroom.expectMail(ChatLine.self, count: 2, from: .only(lobby), after: lastSeen) {
    ///     await mailroom.post(ChatLine(text: "welcome back"), from: lobby)
    /// }
    /// #expect(resumed.map(\.mail.text) == ["while away", "welcome back"])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ type: M.Type,
        count: Int = 1,
        from senders: Senders = .everyone,
        after position: MailPosition?,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async throws -> [Positioned<M>] {
        guard Self.isExpectable(count, at: sourceLocation) else { return [] }
        let arrived = Arrivals<M>()
        let resumed = try await subscribe(to: M.self, from: senders, after: position, where: arrived.record)
        return try await collect(
            count,
            arrived,
            resumed,
            "\(senders)",
            position,
            within: limit,
            at: sourceLocation,
            during: action
        )
    }

    /// ``expectMail(_:count:from:after:within:sourceLocation:during:)`` for every sender of `S`:
    /// resumes with `subscribe(to:fromAny:after:)`, from the type's positions, and returns the
    /// mails with their senders and positions, with the same issues.
    ///
    /// ```swift
    /// let resumed = try await mailroom.expectMail(ChatLine.self, fromAny: RoomID.self, after: nil) {
    ///     await mailroom.post(ChatLine(text: "hi"), from: lobby)
    /// }
    /// #expect(resumed.map(\.mail.sender) == [lobby])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        count: Int = 1,
        fromAny senderType: S.Type,
        after position: MailPosition?,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async throws -> [Positioned<Envelope<M, S>>] {
        guard Self.isExpectable(count, at: sourceLocation) else { return [] }
        let arrived = Arrivals<M>()
        let resumed = try await subscribe(to: M.self, fromAny: S.self, after: position, where: arrived.record)
        return try await collect(
            count,
            arrived,
            resumed,
            "any \(S.self)",
            position,
            within: limit,
            at: sourceLocation,
            during: action
        )
    }

    /// The one body of the positioned `expectMail`s, once the subscription is made.
    private nonisolated(nonsending) func collect<M: Mail, Element: Sendable>(
        _ count: Int,
        _ arrived: Arrivals<M>,
        _ resumed: Resumption<AsyncStream<Positioned<Element>>>,
        _ senders: String,
        _ position: MailPosition?,
        within limit: Duration,
        at sourceLocation: SourceLocation,
        during action: () async throws -> Void
    ) async throws -> [Positioned<Element>] {
        if let gap = resumed.gap {
            let from = position.map(String.init(describing:)) ?? "nil"
            Issue.record(
                "the history of \(M.self) no longer reaches the position \(from): \(gap)",
                sourceLocation: sourceLocation
            )
        }
        try await action()
        let received = Locked<[Positioned<Element>]>([])
        let complete = await Self.first(in: resumed.mail, within: limit, at: sourceLocation) { positioned in
            received.withLock { $0.append(positioned) }
            return arrived.count >= count && received.withLock { $0.count } >= count
        }
        Self.report(
            count,
            arrived,
            complete: complete != nil,
            from: senders,
            " after the position",
            within: limit,
            at: sourceLocation
        )
        return received.withLock { $0 }
    }
}
