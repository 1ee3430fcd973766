@_spi(AsyncMailInternal) import AsyncMail
import CoreMetrics

/// The metrics of each mail type, made the first time the type is seen.
///
/// Every post reads its type's metrics here, so they are found with no lock (a `TypeIndex`, whose
/// entries last as long as the observability, one per mail type the program posts): posts of
/// different types, or to different rooms of one, share no lock on their way to their counters.
/// A mail type's metrics are made outside any lock (a metrics factory is user code) and the first
/// set filed wins, so two threads that meet a new type at once still share one set.
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
    /// One type's metrics, as the map files them.
    private final class Filed: Sendable {
        let metrics: OfType
        init(_ metrics: OfType) { self.metrics = metrics }
    }

    // `concurrentFirstPosts` races first posts of new types, and CI runs it under TSan.
    private let byType = TypeIndex<Filed>()

    init(factory: (any MetricsFactory)?, dimensions: [(String, String)]) {
        self.factory = factory
        self.dimensions = dimensions
    }

    func of(_ type: any Mail.Type) -> OfType {
        if let known = byType.object(for: type) { return known.metrics }
        let made = Filed(make(for: type))
        return byType.object(for: type) { made }.metrics
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
