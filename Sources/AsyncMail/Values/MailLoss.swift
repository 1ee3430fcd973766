/// Mail a subscription lost at one point of its stream, told in order among its mail: the mails
/// before it, then the loss with its exact count, then the mails after it. The subscription goes
/// on.
///
/// A ``DroppingStream`` hands losses out as ``Delivery/lost(_:)``. Switch over ``code`` with a
/// `default`: codes may be added.
///
/// ```swift
/// for await delivery in inbox {
///     switch delivery {
///     case .mail(let line): print(line.text)
///     case .lost(let loss): print("missed \(loss.count) lines")
///     }
/// }
/// ```
public struct MailLoss: Sendable, Hashable, CustomStringConvertible {
    /// Why the mail was lost.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The subscription's buffer was full: its backlog dropped this many mails, the oldest
        /// buffered ones (``Backlog/droppingOldest(past:)``) or the newest posted ones
        /// (``Backlog/droppingNewest(past:)``). The posts that dropped them counted each in
        /// ``Receipt/dropped``.
        public static let dropped = Code("dropped")
        /// Mail numbered in the subscription's room by a relay's shared store that never reached
        /// this process: deleted by the store's retention before this process read it, or
        /// rejected as not a relay's (the relay's `RelayEvent`s say which). Told where the hole in
        /// the room's numbers is, before the next mail read.
        public static let missed = Code("missed")

        public var description: String { name }
    }

    /// Why.
    public let code: Code
    /// How many mails were lost at this point: at least 1.
    public let count: Int

    /// A loss of `count` mails, for tests and for a consumer that forwards losses.
    public init(code: Code, count: Int) {
        self.code = code
        self.count = count
    }

    public var description: String {
        "\(count) \(count == 1 ? "mail" : "mails") lost (\(code))"
    }
}
