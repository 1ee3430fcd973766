import AsyncMail
import CoreMetrics
import Instrumentation

/// A mailroom's posts and subscriptions as swift-metrics metrics, and the `ServiceContext` of each
/// post carried to the code that handles it.
///
/// Give it to a mailroom when you make one:
///
/// ```swift
/// let mailroom = Mailroom(instrumentation: MailroomObservability())
/// ```
///
/// **Metrics**, one set per mail type, with these dimensions: `messaging.system` (`asyncmail`) and
/// `messaging.destination.name` (the mail type's name, such as `Chat.ChatLine`). Sender values never
/// become dimensions, so the number of series is bounded by the number of mail types.
/// - `messaging.client.sent.messages` (counter): mails posted.
/// - `messaging.client.consumed.messages` (counter): mails handed to a subscription (buffered for
///   it or taken by a waiting consumer), one per subscription: `Receipt.delivered`.
/// - `asyncmail.mailroom.dropped.messages` (counter): mails a full `.bufferingOldest`/`.bufferingNewest`
///   buffer lost: `Receipt.dropped`.
/// - `asyncmail.mailroom.ended.subscriptions` (counter): subscriptions a post ended at their backlog
///   limit: `Receipt.ended`.
/// - `asyncmail.mailroom.subscriptions` (meter, up and down): live subscriptions, observations
///   included and taps excluded.
///
/// **Trace context.** The `ServiceContext` current when mail is posted travels with it: `observe`
/// handlers and `serve`'s deliveries run inside it, and a `for await` loop reads it from
/// `BoundedStream.withContexts` (see `PostContext.serviceContext`). A
/// relay carries it to other processes. Nothing here captures a tracer: each use looks up the
/// instrument bootstrapped at that moment, so bootstrapping after making the mailroom works.
///
/// The metrics factory is looked up the first time each mail type is posted or subscribed to, for
/// the same reason, unless you pass one.
public final class MailroomObservability: MailroomInstrumentation {
    private let metrics: MailMetrics

    /// Creates the instrumentation.
    ///
    /// - Parameters:
    ///   - metricsFactory: Where metrics go; by default `MetricsSystem.factory`, read when a mail
    ///     type's metrics are first made.
    ///   - dimensions: Dimensions added to every metric, such as `[("service", "chat")]`. Keep
    ///     their values bounded.
    public init(metricsFactory: (any MetricsFactory)? = nil, dimensions: [(String, String)] = []) {
        metrics = MailMetrics(factory: metricsFactory, dimensions: dimensions)
    }

    public func currentContext() -> PostContext {
        guard let context = ServiceContext.current else { return .none }
        return PostContext(context)
    }

    public nonisolated(nonsending) func withContext(
        _ context: PostContext,
        _ body: nonisolated(nonsending) () async -> Void
    ) async {
        await ServiceContext.withValue(context.serviceContext) { await body() }
    }

    public func didPost(_ type: any Mail.Type, mails: Int, receipt: Receipt) {
        let metrics = metrics.of(type)
        metrics.sent.increment(by: mails)
        if receipt.delivered > 0 { metrics.consumed.increment(by: receipt.delivered) }
        if receipt.dropped > 0 { metrics.dropped.increment(by: receipt.dropped) }
        if receipt.ended > 0 { metrics.ended.increment(by: receipt.ended) }
    }

    public func subscriptionStarted(_ type: any Mail.Type) {
        metrics.of(type).subscriptions.increment()
    }

    public func subscriptionEnded(_ type: any Mail.Type) {
        metrics.of(type).subscriptions.decrement()
    }
}

extension PostContext {
    /// The `ServiceContext` the mail was posted in, when the mailroom's instrumentation is
    /// ``MailroomObservability`` and the poster had one.
    ///
    /// ```swift
    /// for try await delivery in inbox.withContexts {
    ///     try await withSpan("handle line", context: delivery.context.serviceContext ?? .topLevel) { _ in
    ///         try await handle(delivery.mail)
    ///     }
    /// }
    /// ```
    public var serviceContext: ServiceContext? { value as? ServiceContext }
}
