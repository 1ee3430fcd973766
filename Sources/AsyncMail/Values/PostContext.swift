/// The context a post was made in, captured by a ``MailroomInstrumentation`` and handed over with
/// the mail.
///
/// Opaque to AsyncMail: only the instrumentation that captured it reads ``value`` (with
/// `AsyncMailObservability` it is a `ServiceContext`). A mailroom without instrumentation, and mail
/// replayed by `startingWithLatest`, carry ``none``.
// A class, not a struct: every post hands its context through the delivery path, and a reference
// is copied with a retain where an existential inside a struct took an outlined value-witness copy
// per subscriber, which a post without instrumentation would pay too.
public final class PostContext: Sendable {
    /// What the instrumentation captured, or `nil`.
    public let value: (any Sendable)?

    /// Wraps a captured value.
    public init(_ value: (any Sendable)?) {
        self.value = value
    }

    /// No context.
    public static let none = PostContext(nil)
}
