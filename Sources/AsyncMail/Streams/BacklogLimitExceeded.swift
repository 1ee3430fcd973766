/// Thrown by a ``BoundedStream`` whose consumer fell too far behind: its subscription has ended.
///
/// A post that finds the stream's buffer holding ``limit`` mails ends the subscription instead of
/// buffering more, the way Redis disconnects a pub/sub client whose output buffer passes its
/// limit. That post counts it in ``Receipt/ended``; the consumer's next `next()` throws this
/// error, and mail still buffered is discarded. A server closes the connection with a reason:
///
/// ```swift
/// do {
///     for try await line in inbox { try await socket.send(line) }
/// } catch {
///     try await socket.close(reason: "too slow: more than \(error.limit) messages behind")
/// }
/// ```
public struct BacklogLimitExceeded: Error, Sendable, Hashable, CustomStringConvertible {
    /// The backlog limit the subscription was made with.
    public let limit: Int

    /// Creates the error for a subscription made with `limit`.
    public init(limit: Int) {
        self.limit = limit
    }

    public var description: String {
        "BacklogLimitExceeded(limit: \(limit)): the consumer fell behind and its subscription ended"
    }
}
