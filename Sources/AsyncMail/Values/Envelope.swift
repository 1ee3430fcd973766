/// A mail handed over together with the sender that posted it.
///
/// Subscriptions made with ``Mailroom/subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``
/// yield envelopes, so one loop can serve every sender of a type and still tell them apart.
///
/// ```swift
/// for await envelope in await mailroom.subscribe(to: Moved.self, fromAny: Player.self) {
///     print(envelope.sender.name, envelope.mail.square)
/// }
/// ```
public struct Envelope<M: Mail, S: Sendable>: Sendable {
    /// The mail that was posted.
    public let mail: M
    /// The sender it was posted from.
    public let sender: S

    /// Creates an envelope; the ``Mailroom`` makes these for you.
    public init(mail: M, sender: S) {
        self.mail = mail
        self.sender = sender
    }
}
