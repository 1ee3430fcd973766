@_spi(AsyncMailInternal) import AsyncMail
import CoreMetrics

/// A relay's counters, publish durations and receive lags as swift-metrics metrics.
///
/// Every metric has the dimensions `messaging.system` (`asyncmail-postgres`) and
/// `messaging.destination.name` (the channel's name), nothing else that varies, so their number is
/// fixed. The metrics are made the first time something is recorded, from the factory in
/// the relay's `Configuration.metricsFactory` or else `MetricsSystem.factory` as bootstrapped
/// by then; a relay made before the bootstrap still reports.
@_spi(AsyncMailRelay)
public final class RelayMetrics: Sendable {
    /// Each counter of ``RelayCounters`` and the metric it feeds.
    public static let counters: [(label: String, read: @Sendable (RelayCounters) -> Int)] = [
        ("asyncmail.relay.queued.messages", { $0.queued }),
        ("messaging.client.sent.messages", { $0.published }),
        ("asyncmail.relay.spilled.messages", { $0.spilled }),
        ("messaging.client.consumed.messages", { $0.received }),
        ("asyncmail.relay.disconnects", { $0.disconnects }),
        ("asyncmail.relay.duplicate.messages", { $0.duplicates }),
        ("asyncmail.relay.missing.messages", { $0.missing }),
        ("asyncmail.relay.publish.failures", { $0.publishFailures }),
        ("asyncmail.relay.oversize.messages", { $0.oversize }),
        ("asyncmail.relay.unknown_type.messages", { $0.unknownType }),
        ("asyncmail.relay.decode_failures.messages", { $0.decodeFailures }),
        ("asyncmail.relay.queue_overflow.posts", { $0.queueOverflow }),
        ("asyncmail.relay.rejected.payloads", { $0.rejected }),
        ("asyncmail.relay.presence.joins", { $0.presenceJoins }),
        ("asyncmail.relay.presence.leaves", { $0.presenceLeaves }),
        ("asyncmail.relay.presence.expired_instances", { $0.presenceExpired }),
    ]

    /// The metrics, once made.
    private final class Instruments: Sendable {
        let counters: [Counter]
        /// From a post entering the outbound queue to its statement's success.
        let publishDuration: Timer
        /// From the publisher writing a post to this process delivering it, across both clocks.
        let receiveLag: Timer
        /// Presence: the entries this relay lists, in all topics.
        let presenceEntries: Gauge

        init(factory: any MetricsFactory, dimensions: [(String, String)]) {
            counters = RelayMetrics.counters.map { Counter(label: $0.label, dimensions: dimensions, factory: factory) }
            publishDuration = Timer(
                label: "messaging.client.operation.duration",
                dimensions: dimensions + [("messaging.operation.name", "publish")],
                factory: factory
            )
            receiveLag = Timer(label: "asyncmail.relay.receive.lag", dimensions: dimensions, factory: factory)
            presenceEntries = Gauge(label: "asyncmail.relay.presence.entries", dimensions: dimensions, factory: factory)
        }
    }

    private let factory: (any MetricsFactory)?
    private let dimensions: [(String, String)]
    private let made = Guarded<Instruments?>(nil)

    /// Metrics of `system` (`asyncmail-postgres`) for `destination` (a channel's name).
    public init(factory: (any MetricsFactory)?, system: String, destination: String) {
        self.factory = factory
        self.dimensions = [("messaging.system", system), ("messaging.destination.name", destination)]
    }

    /// Adds what each counter gained between `before` and `after`.
    public func add(from before: RelayCounters, to after: RelayCounters) {
        guard before != after else { return }
        let instruments = instruments()
        for (index, counter) in Self.counters.enumerated() {
            let gained = counter.read(after) - counter.read(before)
            if gained > 0 { instruments.counters[index].increment(by: gained) }
        }
    }

    public func publishTook(_ duration: Duration) {
        instruments().publishDuration.recordNanoseconds(duration.nanoseconds)
    }

    public func presenceEntries(_ count: Int) {
        instruments().presenceEntries.record(count)
    }

    public func receivedAfter(milliseconds lag: Int) {
        instruments().receiveLag.recordMilliseconds(max(lag, 0))
    }

    /// The metrics, made on first use outside the lock (a metrics factory is user code); the
    /// first set stored wins.
    private func instruments() -> Instruments {
        if let instruments = made.withLock({ $0 }) { return instruments }
        let instruments = Instruments(factory: factory ?? MetricsSystem.factory, dimensions: dimensions)
        return made.withLock { made in
            if let first = made { return first }
            made = instruments
            return instruments
        }
    }
}

@_spi(AsyncMailRelay)
extension Duration {
    /// The whole duration in nanoseconds, saturating at `Int64.max`.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowed) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? .max : sum
    }
}
