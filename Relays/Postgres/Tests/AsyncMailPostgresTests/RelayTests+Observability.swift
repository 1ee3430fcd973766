import AsyncMail
import AsyncMailObservability
import AsyncMailPostgres
import AsyncMailTesting
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

/// The relay test process's one tracer, bootstrapped by the first test that needs it.
/// `InstrumentationSystem` can be bootstrapped once per process.
enum RelayTracer {
    static let shared: InMemoryTracer = {
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()
}

/// Each of ``RelayCounters`` and the metric the relay reports it as.
let relayMetrics: [(label: String, counter: @Sendable (RelayCounters) -> Int)] = [
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

/// What a handler in the receiving process saw of the trace it ran in.
actor ReceivedTraces {
    private(set) var traceIDs: [String?] = []
    func record(_ traceID: String?) { traceIDs.append(traceID) }
}

extension RelayTests {
    // MARK: Observability

    @Test(
        "a handler in process B continues the trace begun in process A; both relays' metrics match their counters",
        arguments: [PostgresRelay.Mode.durable(), .ephemeral]
    )
    func traceAndMetricsCrossRelays(_ mode: PostgresRelay.Mode) async throws {
        let channel = try freshChannel()
        let (sendingMetrics, receivingMetrics) = (TestMetrics(), TestMetrics())
        let here = Mailroom(instrumentation: MailroomObservability())
        let there = Mailroom(instrumentation: MailroomObservability())
        let sending = try makeRelay(here, on: channel, mode: mode) { $0.metricsFactory = sendingMetrics }
        let receiving = try makeRelay(there, on: channel, mode: mode) { $0.metricsFactory = receivingMetrics }
        try await start(sending)
        try await start(receiving)
        // Bootstrapped only now, after both relays and mailrooms exist (unless an earlier run of
        // this test did it): neither may have captured a tracer or an instrument.
        let tracer = RelayTracer.shared

        let traces = ReceivedTraces()
        let observation = await there.observe(ChatLine.self, owner: traces) { traces, _ in
            await traces.record(ServiceContext.current?.inMemorySpanContext?.traceID)
        }
        let inbox = await there.subscribe(to: ChatLine.self, backlog: .ending(past: 16))
        let sent = await withSpan("send line") { span in
            await here.post(ChatLine(text: "traced"), from: RoomID(name: "lobby"))
            return span.context.inMemorySpanContext
        }
        let origin = try #require(sent)
        let delivery = try #require(try await inbox.withContexts.first(1).first)
        #expect(delivery.mail.text == "traced")
        #expect(delivery.context.serviceContext?.inMemorySpanContext?.traceID == origin.traceID)
        try await withTimeout { await observation.waitUntilHandled() }
        #expect(await traces.traceIDs == [origin.traceID])

        // B's consumer span is a child of A's span; A's publish span links to it. Each ends after
        // what the test saw: B's once its post has returned, A's once the database has answered
        // (which can be after B has the mail), so both are waited for.
        let (processName, publishName) = ("\(channel.name) process", "\(channel.name) publish")
        try await waitUntil("both relays' spans have ended") {
            let ended = tracer.finishedSpans.map(\.operationName)
            return ended.contains(processName) && ended.contains(publishName)
        }
        let process = tracer.finishedSpans.first { $0.operationName == processName }
        #expect(process?.traceID == origin.traceID)
        #expect(process?.parentSpanID == origin.spanID)
        let publish = tracer.finishedSpans.first { $0.operationName == publishName }
        #expect(publish?.links.compactMap { $0.context.inMemorySpanContext?.spanID } == [origin.spanID])

        // The publisher records the statement's duration after counting it, and the receiver the
        // lag after delivering: nothing announces either, so they are waited for.
        let relayDimensions = [
            ("messaging.system", "asyncmail-postgres"), ("messaging.destination.name", channel.name),
        ]
        let publishDimensions = relayDimensions + [("messaging.operation.name", "publish")]
        try await waitUntil("the publish duration is recorded") {
            (try? sendingMetrics.expectTimer("messaging.client.operation.duration", publishDimensions))?.values.count
                == 1
        }
        try await waitUntil("the receive lag is recorded") {
            (try? receivingMetrics.expectTimer("asyncmail.relay.receive.lag", relayDimensions))?.values.count == 1
        }

        // In ephemeral mode a notification is the envelope: one nobody could send is rejected and
        // counted. Then every metric matches its counter.
        if mode == .ephemeral {
            try await Database.notify(on: channel, "not an envelope")
            // Both relays listen on the channel, so both reject it, each at its own moment: the
            // counter first, then its metric, just after the lock. All four are waited for.
            try await waitUntil("both relays count the rejection") {
                [(sending, sendingMetrics), (receiving, receivingMetrics)].allSatisfy { relay, metrics in
                    relay.counters.rejected == 1
                        && (try? metrics.expectCounter("asyncmail.relay.rejected.payloads", relayDimensions))?
                            .totalValue == 1
                }
            }
        }
        for (relay, metrics) in [(sending, sendingMetrics), (receiving, receivingMetrics)] {
            let counters = relay.counters
            for (label, counter) in relayMetrics {
                let total = try metrics.expectCounter(label, relayDimensions).totalValue
                #expect(total == Int64(counter(counters)), "\(label)")
            }
        }
        #expect(sending.counters.published == 1)
        #expect(receiving.counters.received == 1)
        let lag = try receivingMetrics.expectTimer("asyncmail.relay.receive.lag", relayDimensions)
        #expect(lag.values.allSatisfy { $0 >= 0 })
    }
}
