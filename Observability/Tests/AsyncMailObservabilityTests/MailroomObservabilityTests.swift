import AsyncMail
import AsyncMailObservability
import AsyncMailTesting
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

struct Ping: Mail { let id: Int }
struct Pong: Mail { let id: Int }
struct RoomID: Hashable, Sendable { let name: String }

/// A mail type per `Tag`, so that concurrent tests can meet a type nobody has posted yet.
struct Tagged<Tag: Sendable>: Mail { let id: Int }

/// The process's one tracer. `InstrumentationSystem` can be bootstrapped once per process, so every
/// test that traces shares it and tells its spans apart by their trace id.
enum TracingFixture {
    /// A mailroom made before the tracer is bootstrapped: it must still trace, because nothing in
    /// AsyncMail captures a tracer or an instrument before it uses one.
    static let mailroomMadeBeforeBootstrap = Mailroom(instrumentation: MailroomObservability())

    static let tracer: InMemoryTracer = {
        _ = mailroomMadeBeforeBootstrap
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    /// The finished span of that name in the trace `traceID`.
    static func span(_ name: String, in traceID: String) -> FinishedInMemorySpan? {
        tracer.finishedSpans.first { $0.operationName == name && $0.traceID == traceID }
    }
}

/// What a handler saw of the trace it ran in.
actor TraceLog {
    private(set) var traceIDs: [String?] = []
    func record(_ traceID: String?) { traceIDs.append(traceID) }
}

private let system = ("messaging.system", "asyncmail")

private func destination(_ type: any Mail.Type) -> (String, String) {
    ("messaging.destination.name", String(reflecting: type))
}

@Suite("Metrics: posts and subscriptions, per mail type")
struct MetricsTests {
    @Test("sent, consumed, dropped and ended follow the receipts, per mail type")
    func countersFollowReceipts() async throws {
        let metrics = TestMetrics()
        let mailroom = Mailroom(instrumentation: MailroomObservability(metricsFactory: metrics))
        let all = await mailroom.subscribe(to: Ping.self)
        let one = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(1))
        let bounded = await mailroom.subscribe(to: Pong.self, backlog: .ending(past: 1))
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])  // 3 + 1 consumed, 2 dropped
        await mailroom.post(Pong(id: 1), from: RoomID(name: "lobby"))  // consumed
        await mailroom.post(Pong(id: 2))  // ends the bounded subscription

        let ping = [system, destination(Ping.self)]
        let pong = [system, destination(Pong.self)]
        #expect(try metrics.expectCounter("messaging.client.sent.messages", ping).totalValue == 3)
        #expect(try metrics.expectCounter("messaging.client.consumed.messages", ping).totalValue == 4)
        #expect(try metrics.expectCounter("asyncmail.mailroom.dropped.messages", ping).totalValue == 2)
        #expect(try metrics.expectCounter("messaging.client.sent.messages", pong).totalValue == 2)
        #expect(try metrics.expectCounter("messaging.client.consumed.messages", pong).totalValue == 1)
        #expect(try metrics.expectCounter("asyncmail.mailroom.ended.subscriptions", pong).totalValue == 1)
        // A receipt's zero counts add nothing.
        #expect(try metrics.expectCounter("asyncmail.mailroom.ended.subscriptions", ping).values.isEmpty)
        // Never a sender's value: the series are the two types' own.
        let labels = Set(metrics.counters.flatMap { $0.dimensions.map(\.1) })
        #expect(!labels.contains { $0.contains("lobby") })
        _ = (all, one, bounded)
    }

    @Test("the subscription meter goes up and down with streams and observations; taps are not in it")
    func subscriptionMeter() async throws {
        let metrics = TestMetrics()
        let mailroom = Mailroom(instrumentation: MailroomObservability(metricsFactory: metrics))
        let meter = { try metrics.expectMeter("asyncmail.mailroom.subscriptions", [system, destination(Ping.self)]) }
        var pings: AsyncStream<Ping>? = await mailroom.subscribe(to: Ping.self)
        let observation = await mailroom.observe(Ping.self, owner: TraceLog()) { _, _ in }
        let tap = await mailroom.tap()
        #expect(try meter().lastValue == 2)
        pings = nil
        #expect(try meter().lastValue == 1)
        observation.cancel()
        #expect(try meter().lastValue == 0)
        #expect(metrics.meters.count == 1)
        _ = (pings, tap)
    }

    @Test("tasks that meet a new mail type at once share one set of metrics and lose no count")
    func concurrentFirstPosts() async throws {
        let metrics = TestMetrics()
        let mailroom = Mailroom(instrumentation: MailroomObservability(metricsFactory: metrics))
        enum Fresh {}
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for id in 0..<250 { await mailroom.post(Tagged<Fresh>(id: task * 1_000 + id)) }
                }
            }
        }
        let sent = metrics.counters(label: "messaging.client.sent.messages")
        #expect(sent.count == 1)
        #expect(sent.first?.totalValue == 2_000)
    }

    @Test("dimensions given at init are added to every metric")
    func extraDimensions() async throws {
        let metrics = TestMetrics()
        let observability = MailroomObservability(metricsFactory: metrics, dimensions: [("service", "chat")])
        let mailroom = Mailroom(instrumentation: observability)
        await mailroom.post(Ping(id: 1))
        let counter = try metrics.expectCounter(
            "messaging.client.sent.messages",
            [system, destination(Ping.self), ("service", "chat")]
        )
        #expect(counter.totalValue == 1)
    }
}

@Suite("Tracing: the poster's ServiceContext reaches the code that handles its mail")
struct TracingTests {
    @Test("an observe handler continues the poster's trace")
    func observeContinuesTheTrace() async throws {
        let tracer = TracingFixture.tracer
        let mailroom = Mailroom(instrumentation: MailroomObservability())
        let log = TraceLog()
        let observation = await mailroom.observe(Ping.self, owner: log) { log, ping in
            let span = startSpan("handle ping \(ping.id)")
            await log.record(span.context.inMemorySpanContext?.traceID)
            span.end()
        }
        let traceID = await withSpan("checkout") { span in
            await mailroom.post(Ping(id: 1))
            return span.context.inMemorySpanContext?.traceID
        }
        try await withTimeout { await observation.waitUntilHandled() }
        let trace = try #require(traceID)
        #expect(await log.traceIDs == [trace])
        let handled = try #require(TracingFixture.span("handle ping 1", in: trace))
        #expect(handled.parentSpanID == TracingFixture.span("checkout", in: trace)?.spanID)
        _ = tracer
    }

    @Test("serve's deliveries and a for-await loop over withContexts continue the poster's trace")
    func serveAndForAwaitContinueTheTrace() async throws {
        _ = TracingFixture.tracer
        let mailroom = Mailroom(instrumentation: MailroomObservability())
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 16))
        let loop = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 16))
        let written = AsyncStream.makeStream(of: String?.self)
        let server = Task {
            await inbox.serve { ping in
                let span = startSpan("write ping \(ping.id)")
                written.continuation.yield(span.context.inMemorySpanContext?.traceID)
                span.end()
            } receiving: {
                try await Task.sleep(for: .seconds(3_600))
            }
        }
        let traceID = await withSpan("send") { span in
            await mailroom.post(Ping(id: 7))
            return span.context.inMemorySpanContext?.traceID
        }
        #expect(try await written.stream.first(1) == [traceID])
        let delivery = try await loop.withContexts.first(1)
        #expect(delivery.first?.context.serviceContext?.inMemorySpanContext?.traceID == traceID)
        server.cancel()
        _ = await server.value
    }

    @Test("a mailroom made before the tracer was bootstrapped still carries the trace")
    func lazyLookUp() async throws {
        // Forces the bootstrap, which makes this mailroom first.
        _ = TracingFixture.tracer
        let mailroom = TracingFixture.mailroomMadeBeforeBootstrap
        let inbox = await mailroom.subscribe(to: Tagged<TracingTests>.self, backlog: .ending(past: 4))
        let traceID = await withSpan("early") { span in
            await mailroom.post(Tagged<TracingTests>(id: 1))
            return span.context.inMemorySpanContext?.traceID
        }
        #expect(traceID != nil)
        let delivery = try await inbox.withContexts.first(1)
        #expect(delivery.first?.context.serviceContext?.inMemorySpanContext?.traceID == traceID)
    }

    @Test("mail posted outside any span carries no context, and its handler runs in none")
    func noContextWithoutASpan() async throws {
        _ = TracingFixture.tracer
        let mailroom = Mailroom(instrumentation: MailroomObservability())
        let log = TraceLog()
        // The observation's own task starts inside a span: the handler must not inherit it.
        let observation = await withSpan("observer") { _ in
            await mailroom.observe(Ping.self, owner: log) { log, _ in
                await log.record(ServiceContext.current?.inMemorySpanContext?.traceID)
            }
        }
        await mailroom.post(Ping(id: 1))
        try await withTimeout { await observation.waitUntilHandled() }
        #expect(await log.traceIDs == [nil])
    }
}
