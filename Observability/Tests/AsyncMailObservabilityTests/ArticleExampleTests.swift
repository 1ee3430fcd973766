import AsyncMail
import AsyncMailObservability
import AsyncMailTesting
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

// The code blocks of the Observability article, built and run here.

struct OrderPlaced: Mail { let id: Int }

/// An order desk, as in the article: it handles each order inside the trace that placed it.
actor OrderDesk {
    private(set) var traceIDs: [String?] = []
    /// One element per order handled, for tests to wait on.
    nonisolated let handled = AsyncStream.makeStream(of: Void.self)

    func handle(_ order: OrderPlaced) {
        traceIDs.append(ServiceContext.current?.inMemorySpanContext?.traceID)
        handled.continuation.yield()
    }
}

@Suite("The Observability article's examples")
struct ArticleExampleTests {
    @Test("set-up, a handler in the poster's trace, and the metrics it counts")
    func setUpAndObserve() async throws {
        _ = TracingFixture.tracer
        let metrics = TestMetrics()
        let desk = OrderDesk()
        let mailroom = Mailroom(instrumentation: MailroomObservability(metricsFactory: metrics))
        // snippet.show
        let observation = await mailroom.observe(OrderPlaced.self, owner: desk) { desk, order in
            await desk.handle(order)  // runs inside the ServiceContext of the `post` below
        }
        await withSpan("checkout") { span in
            span.attributes["order.id"] = 42
            await mailroom.post(OrderPlaced(id: 42))
        }
        // snippet.hide
        try await withTimeout { await observation.waitUntilHandled() }
        let traceIDs = await desk.traceIDs
        #expect(traceIDs.count == 1 && traceIDs.first! != nil)
        #expect(
            try metrics.expectCounter(
                "messaging.client.sent.messages",
                [
                    ("messaging.system", "asyncmail"),
                    ("messaging.destination.name", String(reflecting: OrderPlaced.self)),
                ]
            ).totalValue == 1
        )
    }

    @Test("a for-await loop continues each mail's trace")
    func forAwait() async throws {
        _ = TracingFixture.tracer
        let mailroom = Mailroom(instrumentation: MailroomObservability())
        let orders = await mailroom.subscribe(to: OrderPlaced.self, backlog: .ending(past: 1_024))
        let sent = await withSpan("checkout") { span in
            await mailroom.post(OrderPlaced(id: 1))
            return span.context.inMemorySpanContext?.traceID
        }
        let desk = OrderDesk()
        let consumer = Task {
            // snippet.show
            for try await delivery in orders.withContexts {
                let context = delivery.context.serviceContext ?? .topLevel
                await withSpan("fulfil order", context: context, ofKind: .consumer) { span in
                    span.attributes["order.id"] = delivery.mail.id
                    await desk.handle(delivery.mail)  // in the span, so in the poster's trace
                }
            }
            // snippet.hide
        }
        _ = try await desk.handled.stream.first(1)
        #expect(await desk.traceIDs == [sent])
        consumer.cancel()
    }
}
