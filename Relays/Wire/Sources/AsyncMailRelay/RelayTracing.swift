import AsyncMail
import Instrumentation
@_spi(AsyncMailRelay) import RelayWire
import Tracing

/// How a relay carries trace context across processes, with whatever instrument the application
/// bootstrapped: looked up at each use, never captured, so a relay made before the bootstrap
/// still propagates.
@_spi(AsyncMailRelay)
public enum RelayTracing {
    /// The trace context of `context` as the wire's JSON text, injected by the bootstrapped
    /// instrument (a W3C `traceparent`, in production); nil without a context or an instrument.
    public static func trace(of context: PostContext) -> String? {
        guard let serviceContext = context.value as? ServiceContext else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(serviceContext, into: &carrier, using: DictionaryInjector())
        return OutboundPost.traceText(carrier)
    }

    /// Runs `publish` inside a producer span for one statement of `posts`, linked to the context
    /// each post was made in: a batch has many parents, so links rather than one parent.
    public static func publishing<Result>(
        _ posts: [OutboundPost],
        destination: String,
        system: String,
        _ publish: () async throws -> Result
    ) async throws -> Result {
        let links = posts.compactMap { $0.context.value as? ServiceContext }
        guard !links.isEmpty else { return try await publish() }
        let span = InstrumentationSystem.tracer.startSpan(
            "\(destination) publish",
            context: .topLevel,
            ofKind: .producer
        )
        defer { span.end() }
        span.attributes["messaging.system"] = system
        span.attributes["messaging.destination.name"] = destination
        span.attributes["messaging.batch.message_count"] = posts.reduce(0) { $0 + $1.mailCount }
        for link in links { span.addLink(SpanLink(context: link, attributes: [:])) }
        do {
            return try await publish()
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// Runs `deliver` inside a consumer span whose parent is the context the publisher injected,
    /// so that the receiving mailroom's instrumentation captures it and its handlers continue the
    /// trace; without an injected context, `deliver` runs as it is.
    static func receiving(
        _ post: InboundPost,
        destination: String,
        system: String,
        _ deliver: () async -> Void
    ) async {
        guard !post.trace.isEmpty else { return await deliver() }
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(post.trace, into: &context, using: DictionaryExtractor())
        let span = InstrumentationSystem.tracer.startSpan("\(destination) process", context: context, ofKind: .consumer)
        defer { span.end() }
        span.attributes["messaging.system"] = system
        span.attributes["messaging.destination.name"] = destination
        span.attributes["messaging.batch.message_count"] = post.count
        await ServiceContext.withValue(span.context) { await deliver() }
    }
}

/// Writes a trace context into the wire's string map.
struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}

/// Reads a trace context from the wire's string map.
struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
