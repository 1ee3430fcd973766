/// A mail with its position, as a subscription with positions yields it: its room's position
/// for a subscription to one room, the type's (one order across rooms) for one that hears
/// several. `M` is the mail type, or an ``Envelope`` for a `fromAny:` subscription.
///
/// ```swift
/// for await line in resumed.mail {
///     try await socket.send(#"{"position": "\#(line.position)", "text": "\#(line.mail.text)"}"#)
/// }
/// ```
public struct Positioned<M: Sendable>: Sendable {
    /// The mail.
    public let mail: M
    /// Where it stands in its history; hand it back to resume after it.
    public let position: MailPosition

    /// A positioned mail, for tests.
    public init(mail: M, position: MailPosition) {
        self.mail = mail
        self.position = position
    }
}

extension Positioned: Equatable where M: Equatable {}
