import AsyncMail
import CoreMetrics
import Foundation

/// The metrics of each mail type, made the first time the type is seen.
///
/// A mail type's metrics are made outside the lock (a metrics factory is user code) and the first
/// set stored wins, so two threads that meet a new type at once still share one set.
final class MailMetrics: Sendable {
    /// One mail type's metrics.
    struct OfType: Sendable {
        let sent: Counter
        let consumed: Counter
        let dropped: Counter
        let ended: Counter
        let subscriptions: Meter
    }

    private let factory: (any MetricsFactory)?
    private let dimensions: [(String, String)]
    // NSLock, not `Synchronization.Mutex`: ThreadSanitizer on Linux sees pthread mutexes, and a
    // user's sanitizer run must not report this cache.
    private let lock = NSLock()
    // Guarded by `lock`: read and written only inside `lock.withLock`, in `of(_:)` below, so every
    // access is ordered by the lock. `concurrentFirstPosts` races it, and CI runs that under TSan.
    nonisolated(unsafe) private var byType: [ObjectIdentifier: OfType] = [:]

    init(factory: (any MetricsFactory)?, dimensions: [(String, String)]) {
        self.factory = factory
        self.dimensions = dimensions
    }

    func of(_ type: any Mail.Type) -> OfType {
        let key = ObjectIdentifier(type)
        if let known = lock.withLock({ byType[key] }) { return known }
        let made = make(for: type)
        return lock.withLock {
            if let first = byType[key] { return first }
            byType[key] = made
            return made
        }
    }

    private func make(for type: any Mail.Type) -> OfType {
        let factory = factory ?? MetricsSystem.factory
        let dimensions =
            [("messaging.system", "asyncmail"), ("messaging.destination.name", String(reflecting: type))]
            + self.dimensions
        return OfType(
            sent: Counter(label: "messaging.client.sent.messages", dimensions: dimensions, factory: factory),
            consumed: Counter(label: "messaging.client.consumed.messages", dimensions: dimensions, factory: factory),
            dropped: Counter(label: "asyncmail.mailroom.dropped.messages", dimensions: dimensions, factory: factory),
            ended: Counter(label: "asyncmail.mailroom.ended.subscriptions", dimensions: dimensions, factory: factory),
            subscriptions: Meter(label: "asyncmail.mailroom.subscriptions", dimensions: dimensions, factory: factory)
        )
    }
}
