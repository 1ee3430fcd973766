/// A mail with its position in its type's history, as a subscription with positions yields it.
///
/// ```swift
/// for await line in resumed.mail {
///     try await socket.send(#"{"position": "\#(line.position)", "text": "\#(line.mail.text)"}"#)
/// }
/// ```
public struct Positioned<M: Mail>: Sendable {
    /// The mail.
    public let mail: M
    /// Where it stands in its type's history; hand it back to resume after it.
    public let position: MailPosition

    /// A positioned mail, for tests.
    public init(mail: M, position: MailPosition) {
        self.mail = mail
        self.position = position
    }
}

extension Positioned: Equatable where M: Equatable {}
