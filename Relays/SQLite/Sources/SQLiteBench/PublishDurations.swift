// The relay's own account of where a mail's time goes on the posting side: its publish duration
// (`messaging.client.operation.duration`), from a post entering the outbound queue to its
// commit, as the relay reports it to swift-metrics. `compare` prints it beside the latency, to
// tell the posting side's share of a p99 from the reading side's.
import CoreMetrics
import Synchronization

/// A metrics factory that keeps the publish durations it is given, and nothing else.
final class PublishDurations: MetricsFactory, Sendable {
    private let durations = Mutex<[Int64]>([])

    /// The durations kept so far, in ms, as "p50 p99 max"; forgets them.
    func take() -> String {
        let taken = durations.withLock { durations in
            defer { durations = [] }
            return durations
        }.sorted()
        guard let last = taken.last else { return "-" }
        func ms(_ nanoseconds: Int64) -> String { String(format: "%.3f", Double(nanoseconds) / 1e6) }
        return [percentile(taken.map(Double.init), 0.5), percentile(taken.map(Double.init), 0.99)]
            .map { ms(Int64($0)) }.joined(separator: " ") + " " + ms(last)
    }

    private final class Keeping: TimerHandler, Sendable {
        let durations: PublishDurations
        init(_ durations: PublishDurations) { self.durations = durations }
        func recordNanoseconds(_ duration: Int64) { durations.durations.withLock { $0.append(duration) } }
    }

    private final class Ignoring: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler,
        Sendable
    {
        func increment(by: Int64) {}
        func increment(by: Double) {}
        func reset() {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Ignoring() }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        Ignoring()
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Ignoring()
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        label == "messaging.client.operation.duration" ? Keeping(self) : Ignoring()
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
