@_spi(AsyncMailInternal) import AsyncMail
import Testing

extension Mailroom {
    /// Waits until the work that `whileSubscribed(to:from:stopAfter:run:)` runs for
    /// `type` and `senders` is running (`running: true`) or stopped (`running: false`), without
    /// subscribing: the check is never demand, so it starts and keeps nothing running.
    ///
    /// A work is running from the moment `whileSubscribed` starts it until `whileSubscribed` has
    /// stopped it (cancelled it and seen it return): during its grace (`stopAfter:`) it is still
    /// running, and so is a work that returned by itself while subscribers remain, since it is
    /// not started again until they have all gone. `senders` must be what the
    /// `whileSubscribed` call was given; with no such call, nothing is running. It returns as soon
    /// as the state holds (at once when it already does), and records one `Issue` at
    /// `sourceLocation` when it does not hold within `limit`; a check that work stays stopped
    /// waits for nothing, so pair it with the event that would have started it.
    ///
    /// ```swift
    /// await mailroom.expectWork(Quote.self, from: .only(acme), running: false)  // nobody listens yet
    /// let quotes = await mailroom.subscribe(to: Quote.self)  // hears ACME too: demand for its feed
    /// await mailroom.expectWork(Quote.self, from: .only(acme), running: true)
    /// ```
    public nonisolated(nonsending) func expectWork<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        running: Bool,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let counts = runningWorkCounts(M.self, from: senders)
        await expect(
            counts,
            running: running,
            "whileSubscribed(to: \(M.self), from: \(senders))",
            limit,
            sourceLocation
        )
    }

    /// ``expectWork(_:from:running:within:sourceLocation:)`` for the work of
    /// `whileSubscribed(to:fromAny:stopAfter:run:)`.
    ///
    /// ```swift
    /// await mailroom.expectWork(Score.self, fromAny: Player.self, running: false)
    /// ```
    public nonisolated(nonsending) func expectWork<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        running: Bool,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let counts = runningWorkCounts(M.self, fromAny: S.self)
        await expect(
            counts,
            running: running,
            "whileSubscribed(to: \(M.self), fromAny: \(S.self))",
            limit,
            sourceLocation
        )
    }

    private nonisolated(nonsending) func expect(
        _ counts: AsyncStream<Int>,
        running: Bool,
        _ work: String,
        _ limit: Duration,
        _ sourceLocation: SourceLocation
    ) async {
        let last = Locked(0)
        let held = await Self.first(in: counts, within: limit, at: sourceLocation) { count in
            last.withLock { $0 = count }
            return (count > 0) == running
        }
        guard held == nil else { return }
        let now = last.withLock { $0 }
        Issue.record(
            Comment(
                rawValue: "expected the work of \(work) to be \(running ? "running" : "stopped") within \(limit); "
                    + (running
                        ? "none of it runs" : "\(counting(now, "run")) of it \(now == 1 ? "is" : "are") still running")
            ),
            sourceLocation: sourceLocation
        )
    }
}
