extension Mailroom {
    /// The number of live subscriptions to a mail type, as a sequence: the current count at
    /// once, then the new count after every change, for as long as the mailroom is open.
    ///
    /// Counts what ``subscriberCount(_:from:)`` counts, under the same rules: `senders` narrows
    /// it the same way, taps are never counted, and subscriptions that take positions are. The
    /// stream keeps only the newest count, so a burst of subscriptions coming and going while
    /// nobody reads costs nothing, and the consumer reads the count as it is now, never a stale
    /// one: the last value yielded was read after the last change. Two changes that cancel out
    /// between two reads may yield nothing at all.
    ///
    /// - Ending: when the mailroom closes, or when the consumer stops (cancelled, or the stream
    ///   dropped).
    /// - Cost: a subscription that comes or goes pays one atomic load while nobody watches its
    ///   mailroom's counts, and one count read per watcher of its type while someone does. Posts
    ///   pay nothing.
    ///
    /// ```swift
    /// for await listeners in await mailroom.subscriberCounts(PriceTick.self) {
    ///     feed.isRunning = listeners > 0
    /// }
    /// ```
    public nonisolated(nonsending) func subscriberCounts<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone
    ) async -> AsyncStream<Int> {
        _switchboard._demand.watch(ObjectIdentifier(M.self)) { [weak switchboard = _switchboard] in
            switchboard?.subscriberCount(M.self, counting: senders.key.map { .hearing($0) } ?? .all) ?? 0
        }
    }

    /// The number of live subscriptions to a mail type that hear every sender of `senderType`,
    /// as a sequence: the current count at once, then every change, as
    /// ``subscriberCounts(_:from:)`` gives them.
    ///
    /// ```swift
    /// for await watching in await mailroom.subscriberCounts(Score.self, fromAny: Player.self) {
    ///     print("\(watching) subscriptions hear every player")
    /// }
    /// ```
    public nonisolated(nonsending) func subscriberCounts<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type
    ) async -> AsyncStream<Int> {
        let senderType = ObjectIdentifier(S.self)
        return _switchboard._demand.watch(ObjectIdentifier(M.self)) { [weak switchboard = _switchboard] in
            switchboard?.subscriberCount(M.self, counting: .senderType(senderType)) ?? 0
        }
    }

    /// Runs `work` while the mail type has at least one subscriber: started when the first one
    /// arrives, cancelled after the last one leaves, started again for the next first one.
    ///
    /// Use it for a producer that is worth running only while someone listens: a price feed, a
    /// ticker, a poll of a slow upstream. It returns when the mailroom closes or the calling task
    /// is cancelled, in both cases after `work` has been cancelled and has returned.
    ///
    /// - Hand-over: after the last subscriber leaves, `work` is cancelled and awaited before it
    ///   can start again, so two runs never overlap; a subscriber that arrives meanwhile waits
    ///   for no more than that hand-over. A subscriber that arrives and leaves while `work` runs
    ///   changes nothing.
    /// - Counting: as ``subscriberCounts(_:from:)`` counts, narrowed by `senders` (a room).
    /// - `work` should check for cancellation (a `Task.sleep` or a `for await` does). If it
    ///   returns while subscribers remain, it is not started again until the count has been zero.
    ///
    /// ```swift
    /// await mailroom.whileSubscribed(to: Tick.self) {
    ///     while !Task.isCancelled {
    ///         await mailroom.post(Tick())
    ///         try? await Task.sleep(for: .seconds(1))
    ///     }
    /// }
    /// ```
    public nonisolated(nonsending) func whileSubscribed<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        run work: @escaping @Sendable () async -> Void
    ) async {
        let counts = await subscriberCounts(M.self, from: senders)
        var running: Task<Void, Never>?
        for await count in counts {
            if count > 0, running == nil {
                running = Task { await work() }
            } else if count == 0, let task = running {
                task.cancel()
                await task.value
                running = nil
            }
        }
        // The mailroom closed, or this task was cancelled.
        running?.cancel()
        await running?.value
    }
}
