/// A mail together with the context it was posted in.
///
/// The elements of ``BoundedStream/withContexts``, for a `for await` loop that continues the
/// poster's trace:
///
/// ```swift
/// let inbox = await mailroom.subscribe(to: ChatLine.self, backlog: .ending(past: 256))
/// for try await delivery in inbox.withContexts {
///     print(delivery.mail.text, delivery.context.value as Any)
/// }
/// ```
public struct Contextual<Element: Sendable>: Sendable {
    /// The mail, as the stream's plain iteration would yield it.
    public let mail: Element
    /// What the mailroom's ``MailroomInstrumentation`` captured when it was posted: ``PostContext/none``
    /// without one.
    public let context: PostContext

    /// Pairs a mail with its context; the mailroom makes these for you.
    public init(mail: Element, context: PostContext) {
        self.mail = mail
        self.context = context
    }
}
