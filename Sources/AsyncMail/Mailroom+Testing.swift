extension Mailroom {
    // Test-only hooks. Internal: reachable from the test target through `@testable import`.

    /// Observes `M` like ``observe(_:owner:bufferingPolicy:startingWithLatest:where:handler:)``,
    /// calling `afterTakingMail` right after the loop takes each mail and before it moves to the
    /// handler's isolation, so a test can cancel at exactly that point.
    nonisolated func observeForTesting<M: Mail, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        owner: Owner,
        afterTakingMail: @escaping @Sendable () -> Void,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) -> Observation {
        let subscription = subscription(to: M.self, bufferingPolicy: .unbounded, startingWithLatest: false, where: nil)
        return Observation.start(subscription, owner: owner, afterTakingMail: afterTakingMail, handler: handler)
    }
}
