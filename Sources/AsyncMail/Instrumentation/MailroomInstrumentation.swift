/// What a ``Mailroom`` reports to and carries with each post, for metrics and tracing.
///
/// AsyncMail stays free of dependencies, so it defines this small protocol and the
/// `AsyncMailObservability` package implements it with swift-metrics and
/// swift-distributed-tracing. Give one to ``Mailroom/init(instrumentation:)``:
///
/// ```swift
/// let mailroom = Mailroom(instrumentation: MailroomObservability())
/// ```
///
/// A mailroom without one pays a nil check per post and per subscription, and nothing else.
/// The protocol is class-bound so that the check is a pointer comparison.
///
/// No method is ever called under one of the mailroom's locks, so an implementation may take its
/// own locks. Keep them short (posts call it from every core: a lock every post takes is a lock
/// every core waits for), and never wait in them for mail:
/// - ``currentContext()`` runs on the posting thread before delivery, and
///   ``didPost(_:mails:receipt:)`` after it, before `post` returns.
/// - The subscription calls run wherever a stream is made or ends. Like a `where:` filter, they can
///   run while a post holds the one delivery order: a post that ends a subscription at its backlog
///   limit, or a subscription made `startingWithLatest`. A ``Mailroom/postSynchronously(_:)`` made
///   from one is deferred until that post is done.
public protocol MailroomInstrumentation: AnyObject, Sendable {
    /// The context current in the posting task, which travels with the mail.
    ///
    /// Called once per post (once for a `post(contentsOf:)` batch), on the posting thread, before
    /// delivery. Typically `ServiceContext.current`.
    func currentContext() -> PostContext

    /// Runs `body` inside a context that ``currentContext()`` captured when mail was posted.
    ///
    /// The mailroom calls it around each `observe` handler call and each `serve` delivery, so that
    /// they continue the poster's trace. Typically `ServiceContext.withValue(...)`.
    nonisolated(nonsending) func withContext(
        _ context: PostContext,
        _ body: nonisolated(nonsending) () async -> Void
    )
        async

    /// A post, or a batch of `mails`, of `type` was delivered as `receipt` says.
    func didPost(_ type: any Mail.Type, mails: Int, receipt: Receipt)

    /// A subscription to `type` was made: a stream, a bounded stream or an observation. Taps are
    /// not counted.
    func subscriptionStarted(_ type: any Mail.Type)

    /// A subscription to `type` ended: called exactly once for each ``subscriptionStarted(_:)``,
    /// whichever way it ends.
    func subscriptionEnded(_ type: any Mail.Type)
}
