extension Mailroom {
    // Test-only hooks, all in this one file. Internal: reachable from the test target through
    // `@testable import`. They read the registry under its lock and change nothing.

    /// A mailroom that calls `probe` just before it yields a replayed mail, with whether the
    /// delivery lock is held then; lets tests prove that no newer post can overtake a replay.
    init(replayProbe probe: @escaping @Sendable (_ deliveryOrderIsHeld: Bool) -> Void) {
        self.init(switchboard: Switchboard(replayProbe: probe))
    }

    /// The number of live taps; lets tests prove a tap is removed.
    var tapCount: Int {
        _switchboard.withRegistry { $0._taps.count }
    }

    /// The number of mail types that have a route table; lets tests prove nothing is retained.
    var routeTableCount: Int {
        _switchboard.withRegistry { $0._tables.count }
    }

    /// Object senders with mail kept for `M`; lets tests prove a departed sender's mail is freed.
    /// Unlike ``latest(_:from:)`` and ``subscriberCount(for:)``, it sweeps nothing.
    func retainedObjectSenderCount<M: Mail>(for type: M.Type) -> Int {
        _switchboard.withRegistry { $0.existingTable(for: M.self)?._latest?._byObject.count ?? 0 }
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
        let subscription = subscription(
            to: M.self,
            from: .everyone,
            bufferingPolicy: .unbounded,
            startingWithLatest: false,
            where: nil
        )
        return Observation.start(subscription, owner: owner, afterTakingMail: afterTakingMail, handler: handler)
    }
}
