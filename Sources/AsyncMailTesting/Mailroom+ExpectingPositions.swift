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
    /// `subscribe(to:from:after:)` throws for a position it refuses (``PositionError``), and what
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
        guard count >= 1 else {
            Issue.record(
                "expectMail needs a count of at least 1, not \(count): use expectNoMail",
                sourceLocation: sourceLocation
            )
            return []
        }
        let arrived = Arrivals<M>()
        let resumed = try await subscribe(to: M.self, from: senders, after: position, where: arrived.record)
        if let gap = resumed.gap {
            Issue.record(
                "the history of \(M.self) no longer reaches the position \(position.map(String.init(describing:)) ?? "nil"): \(gap)",
                sourceLocation: sourceLocation
            )
        }
        try await action()
        let received = Locked<[Positioned<M>]>([])
        let complete = await Self.first(in: resumed.mail, within: limit, at: sourceLocation) { positioned in
            received.withLock { $0.append(positioned) }
            return arrived.count >= count && received.withLock { $0.count } >= count
        }
        if complete == nil {
            Issue.record(
                Comment(
                    rawValue:
                        "expected \(count) \(M.self) from \(senders) after the position within \(limit); \(arrived.describe())"
                ),
                sourceLocation: sourceLocation
            )
        } else if arrived.count > count {
            Issue.record(
                "expected exactly \(count) \(M.self) from \(senders) after the position; \(arrived.describe())",
                sourceLocation: sourceLocation
            )
        }
        return received.withLock { $0 }
    }
}
