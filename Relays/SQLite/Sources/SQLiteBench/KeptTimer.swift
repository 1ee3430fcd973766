// The relay's own account of where a mail's time goes, read from its swift-metrics timers: on the
// posting side its publish duration (`messaging.client.operation.duration`, from a post entering
// the outbound queue to its commit), on the reading side its receive lag
// (`asyncmail.relay.receive.lag`, from the publisher making the row's payload to the delivery,
// in whole milliseconds of the wall clock). `compare` prints both beside the latency, to tell
// apart the parts of a p99.
import CoreMetrics
import Synchronization

/// A metrics factory that keeps what one timer records, and nothing else.
final class KeptTimer: MetricsFactory, Sendable {
    /// The timer's label.
    let label: String
    private let durations = Mutex<[Int64]>([])

    init(_ label: String) {
        self.label = label
    }

    /// The durations kept so far, in ms, as "p50 p99 max"; forgets them.
    func take() -> String {
        let taken = durations.withLock { durations in
            defer { durations = [] }
            return durations
        }
        return percentiles(taken.sorted().map { Double($0) / 1e6 }) ?? "-"
    }

    private final class Keeping: TimerHandler, Sendable {
        let durations: KeptTimer
        init(_ durations: KeptTimer) { self.durations = durations }
        func recordNanoseconds(_ duration: Int64) { durations.durations.withLock { $0.append(duration) } }
    }

    // Every other metric goes to swift-metrics' own handler that records nothing.
    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        NOOPMetricsHandler.instance
    }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        NOOPMetricsHandler.instance
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        label == self.label ? Keeping(self) : NOOPMetricsHandler.instance
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
