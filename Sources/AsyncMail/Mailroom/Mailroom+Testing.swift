import Synchronization

extension Mailroom {
    // Test-only hooks, all in this one file. Internal ones are reachable from the test target
    // through `@testable import`; they read the registry under its lock and change nothing.

    /// What ``shared`` is in this task, when a test scope set it: AsyncMailTesting's
    /// `.isolatedSharedMailroom` trait gives each test its own. `package`, so that only this
    /// package's testing product can set it.
    @TaskLocal package static var _scopedShared: Mailroom?

    /// How many test scopes are running; while none is, ``shared`` skips the task-local look-up.
    static let scopedSharedCount = Atomic(0)

    /// Runs `operation` with ``shared`` being `mailroom` in this task and the tasks it starts.
    package static func withShared<Result: Sendable>(
        _ mailroom: Mailroom,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        scopedSharedCount.add(1, ordering: .releasing)
        defer { scopedSharedCount.subtract(1, ordering: .releasing) }
        return try await $_scopedShared.withValue(mailroom) { try await operation() }
    }

    /// A mailroom that calls `probe` just before it yields a replayed mail, with whether the
    /// subscription's lane is held then; lets tests prove that no newer post can overtake a replay.
    init(replayProbe probe: @escaping @Sendable (_ laneIsHeld: Bool) -> Void) {
        self.init(switchboard: Switchboard(replayProbe: probe))
    }

    /// A mailroom that calls `probe` with each delivery's lanes just before it takes them; lets
    /// tests prove which posts wait for which.
    init(
        instrumentation: (any MailroomInstrumentation)? = nil,
        laneProbe probe: @escaping @Sendable (Lanes) -> Void
    ) {
        self.init(switchboard: Switchboard(instrumentation: instrumentation, laneProbe: probe))
    }

    /// How many `whileSubscribed` works of `M` for `senders` are in their grace (`stopAfter:`),
    /// now and after every change; lets tests wait for a grace to begin, and end, with no clock.
    nonisolated func lingeringWorkCounts<M: Mail>(_ type: M.Type, from senders: Senders) -> AsyncStream<Int> {
        watchWorks(ObjectIdentifier(M.self), senders._workKey) { _, lingering in lingering }
    }

    /// The number of live taps; lets tests prove a tap is removed.
    var tapCount: Int {
        _switchboard.withRegistry { _ in _switchboard._taps.count }
    }

    /// The number of mail types whose route table holds anything (a subscription or kept mail);
    /// lets tests prove nothing is retained. An empty table stays, for posts to find with no
    /// lock, until the mailroom goes.
    var routeTableCount: Int {
        _switchboard._tables.objects.count { ($0 as? any AnyRouteTable)?.isInUse == true }
    }

    /// Object senders with mail kept for `M`; lets tests prove a departed sender's mail is freed.
    /// Unlike ``latest(_:from:)`` and ``subscriberCount(_:from:)``, it sweeps nothing.
    func retainedObjectSenderCount<M: Mail>(for type: M.Type) -> Int {
        guard let table = _switchboard.existingTable(for: M.self) else { return 0 }
        return table.shards.reduce(0) { total, shard in total + shard.withLock { shard._kept?._byObject.count ?? 0 } }
    }

    /// Observes `M` like ``observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)``,
    /// calling `afterTakingMail` right after the loop takes each mail and before it moves to the
    /// handler's isolation, so a test can cancel at exactly that point.
    nonisolated func observeForTesting<M: Mail, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        owner: Owner,
        afterTakingMail: @escaping @Sendable () -> Void,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) -> Observation {
        let progress = ObservationProgress()
        let subscription = subscription(
            to: M.self,
            from: .everyone,
            bufferingPolicy: .unbounded,
            startingWithLatest: false,
            where: progress.counting(nil)
        )
        return Observation.start(
            subscription,
            progress: progress,
            owner: owner,
            afterTakingMail: afterTakingMail,
            handler: handler
        )
    }
}
