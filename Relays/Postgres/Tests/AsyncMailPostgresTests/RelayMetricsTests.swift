import AsyncMailPostgres
@_spi(AsyncMailRelay) import AsyncMailRelay
import MetricsTestKit
import Testing

@testable import AsyncMailPostgres

@Suite("Relay metrics, without a database")
struct RelayMetricsTests {
    @Test("each counter feeds its own metric, and every counter has one")
    func everyCounterItsOwnMetric() throws {
        var counters = RelayCounters()
        counters.queued = 1
        counters.published = 2
        counters.spilled = 3
        counters.received = 4
        counters.disconnects = 5
        counters.duplicates = 6
        counters.missing = 7
        counters.publishFailures = 8
        counters.oversize = 9
        counters.unknownType = 10
        counters.decodeFailures = 11
        counters.queueOverflow = 12
        counters.rejected = 13
        #expect(Mirror(reflecting: counters).children.count == relayMetrics.count)
        let metrics = TestMetrics()
        let reporting = RelayMetrics(factory: metrics, system: "asyncmail-postgres", destination: "unit")
        reporting.add(from: RelayCounters(), to: counters)
        reporting.add(from: counters, to: counters)  // no change, nothing added
        let dimensions = [("messaging.system", "asyncmail-postgres"), ("messaging.destination.name", "unit")]
        for (label, counter) in relayMetrics {
            #expect(try metrics.expectCounter(label, dimensions).totalValue == Int64(counter(counters)), "\(label)")
        }
    }
}
