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
            switchboard?.subscriberCount(M.self, counting: senders.key.map { .reaching($0) } ?? .all) ?? 0
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

    /// Runs `work` while someone would hear the mail it posts: started when the first such
    /// subscription arrives, cancelled after the last one leaves (and `stopAfter` has passed with
    /// none back), started again for the next first one.
    ///
    /// Use it for a producer that is worth running only while someone listens: a price feed, a
    /// ticker, a poll of a slow upstream. It returns when the mailroom closes or the calling task
    /// is cancelled, in both cases after `work` has been cancelled and has returned.
    ///
    /// - Demand: a subscription counts if a post from `senders` would reach it, as
    ///   ``subscriberCount(_:from:)`` counts: with `.only(acme)`, those pinned to `acme`, those
    ///   that hear every sender, and those that hear every sender of `acme`'s type (`fromAny:`),
    ///   whatever else narrows them; with `.everyone`, every subscription to the type. Taps never
    ///   count. The *Server Patterns* article has the rule as a table.
    /// - Grace: `stopAfter` keeps `work` running that long after the last subscriber leaves, so
    ///   that a client that reconnects within it finds the work still running instead of starting
    ///   it again (Kotlin's `SharingStarted.WhileSubscribed(stopTimeoutMillis)`). The default,
    ///   zero, cancels it at once.
    /// - Hand-over: after `work` is cancelled it is awaited before it can start again, so two runs
    ///   never overlap; a subscriber that arrives meanwhile waits for no more than that hand-over.
    ///   A subscriber that arrives and leaves while `work` runs changes nothing.
    /// - `work` should check for cancellation (a `Task.sleep` or a `for await` does). If it
    ///   returns while subscribers remain, it is not started again until the count has been zero.
    /// - Tests: AsyncMailTesting's `expectWork(_:from:running:)` waits for the work to be running
    ///   or stopped without subscribing, so the check is not itself demand.
    ///
    /// ```swift
    /// await mailroom.whileSubscribed(to: Tick.self, stopAfter: .seconds(5)) {
    ///     while !Task.isCancelled {
    ///         await mailroom.post(Tick())
    ///         try? await Task.sleep(for: .seconds(1))
    ///     }
    /// }
    /// ```
    public nonisolated(nonsending) func whileSubscribed<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        stopAfter grace: Duration = .zero,
        run work: @escaping @Sendable () async -> Void
    ) async {
        let counts = await subscriberCounts(M.self, from: senders)
        await run(work, whileCounted: counts, as: ObjectIdentifier(M.self), senders._workKey, stopAfter: grace)
    }

    /// Runs `work` while someone hears every sender of `senderType` (a `fromAny:` subscription for
    /// exactly that type, as ``subscriberCount(_:fromAny:)`` counts), with the grace and hand-over
    /// of ``whileSubscribed(to:from:stopAfter:run:)``.
    ///
    /// ```swift
    /// await mailroom.whileSubscribed(to: Score.self, fromAny: Player.self) {
    ///     await publishScoreboard()
    /// }
    /// ```
    public nonisolated(nonsending) func whileSubscribed<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        stopAfter grace: Duration = .zero,
        run work: @escaping @Sendable () async -> Void
    ) async {
        let counts = await subscriberCounts(M.self, fromAny: S.self)
        let key = Demand.WorkKey.senderType(ObjectIdentifier(S.self))
        await run(work, whileCounted: counts, as: ObjectIdentifier(M.self), key, stopAfter: grace)
    }

    /// The phases of the `whileSubscribed` works of `M` for `senders`: how many are running
    /// (lingering in their grace included), now and after every change. For AsyncMailTesting's
    /// `expectWork`, which must not subscribe.
    package nonisolated func runningWorkCounts<M: Mail>(_ type: M.Type, from senders: Senders) -> AsyncStream<Int> {
        watchWorks(ObjectIdentifier(M.self), senders._workKey)
    }

    /// ``runningWorkCounts(_:from:)`` for the works of `whileSubscribed(to:fromAny:)`.
    package nonisolated func runningWorkCounts<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type
    ) -> AsyncStream<Int> {
        watchWorks(ObjectIdentifier(M.self), .senderType(ObjectIdentifier(S.self)))
    }

    /// Watches the works of `type` and `key`, counting those `counted` picks of each phase's count.
    nonisolated func watchWorks(
        _ type: ObjectIdentifier,
        _ key: Demand.WorkKey,
        counting counted: @escaping @Sendable (_ running: Int, _ lingering: Int) -> Int = { $0 + $1 }
    ) -> AsyncStream<Int> {
        _switchboard._demand.watch(type) { [weak demand = _switchboard._demand] in
            guard let works = demand?.works(type, key) else { return 0 }
            return counted(works.running, works.lingering)
        }
    }

    /// The loop behind `whileSubscribed`: every count and every end of a grace is one event,
    /// handled in turn, so a count that returns during a grace is never missed.
    private nonisolated func run(
        _ work: @escaping @Sendable () async -> Void,
        whileCounted counts: AsyncStream<Int>,
        as type: ObjectIdentifier,
        _ key: Demand.WorkKey,
        stopAfter grace: Duration
    ) async {
        enum Event: Sendable {
            case count(Int)
            /// The grace armed as number `armed` ended.
            case graceEnded(armed: Int)
        }
        let demand = _switchboard._demand
        let id = demand.addWork(type, key)
        defer { demand.removeWork(id) }
        let (events, input) = AsyncStream.makeStream(of: Event.self)
        await withDiscardingTaskGroup { group in
            group.addTask {
                // Ends when the mailroom closes or the caller is cancelled; so then does the loop.
                for await count in counts { input.yield(.count(count)) }
                input.finish()
            }
            var running: Task<Void, Never>?
            var graces = 0  // how many graces were armed: each is named by its number
            var armed: Int?  // the grace now running, if any
            for await event in events {
                switch event {
                case .count(let count) where count > 0:
                    if running == nil {
                        running = Task { await work() }
                    }
                    armed = nil
                    demand.setWork(id, .running)
                case .count:
                    guard running != nil, armed == nil else { continue }
                    guard grace > .zero else {
                        await Self.stop(&running)
                        demand.setWork(id, .idle)
                        continue
                    }
                    graces += 1
                    armed = graces
                    demand.setWork(id, .lingering)
                    group.addTask { [graces] in
                        try? await Task.sleep(for: grace)
                        input.yield(.graceEnded(armed: graces))
                    }
                case .graceEnded(let ended):
                    guard armed == ended else { continue }  // a subscriber came back during it
                    armed = nil
                    await Self.stop(&running)
                    demand.setWork(id, .idle)
                }
            }
            group.cancelAll()  // graces still running: the loop is over
            await Self.stop(&running)
        }
    }

    /// Cancels `work`'s task and waits for it to return, so two runs never overlap.
    private static func stop(_ running: inout Task<Void, Never>?) async {
        running?.cancel()
        await running?.value
        running = nil
    }
}
