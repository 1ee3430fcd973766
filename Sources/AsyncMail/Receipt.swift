/// What a ``Mailroom/post(_:)`` did: how many subscriptions took the mail and how many lost one.
///
/// For every subscription that matched the post, exactly one of the two counts goes up,
/// so `delivered + dropped` is the number of matching subscriptions:
/// - `delivered`: the mail was handed to a waiting consumer or buffered for it.
/// - `dropped`: the subscription's bounded buffer was full, so a mail was lost. With
///   `.bufferingOldest(n)` the lost mail is this one; with `.bufferingNewest(n)` this
///   mail was buffered and the oldest buffered mail was evicted to make room.
///
/// A subscription that ends while the post is in flight counts in neither: its consumer
/// has already stopped listening.
///
/// A ``Mailroom/postSynchronously(_:)`` made while the same thread is delivering another post
/// of the same mailroom (from a `where:` filter, or from the deinit of a mail that delivery
/// released) cannot be delivered in the middle of that post without breaking the one order
/// every subscriber shares. It is *deferred*: its receipt counts its mail in `deferred` and
/// nothing else, and the same thread delivers it, as an ordinary post, right after the one in
/// progress.
public struct Receipt: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Subscriptions that received the mail (handed over or buffered).
    public var delivered: Int
    /// Subscriptions whose full buffer lost a mail because of this post.
    public var dropped: Int
    /// Mails whose delivery waits for the post in progress on this thread; see above.
    public var deferred: Int

    /// Creates a receipt with the given counts.
    public init(delivered: Int = 0, dropped: Int = 0, deferred: Int = 0) {
        self.delivered = delivered
        self.dropped = dropped
        self.deferred = deferred
    }

    /// The number of subscriptions that matched the post.
    public var matched: Int { delivered + dropped }

    /// Adds two receipts, for totals over several posts.
    public static func + (lhs: Receipt, rhs: Receipt) -> Receipt {
        Receipt(
            delivered: lhs.delivered + rhs.delivered,
            dropped: lhs.dropped + rhs.dropped,
            deferred: lhs.deferred + rhs.deferred
        )
    }

    /// Adds a receipt to a running total.
    public static func += (lhs: inout Receipt, rhs: Receipt) {
        lhs = lhs + rhs
    }

    /// Reads like the initialiser call that would make the same receipt.
    public var description: String {
        deferred == 0
            ? "Receipt(delivered: \(delivered), dropped: \(dropped))"
            : "Receipt(delivered: \(delivered), dropped: \(dropped), deferred: \(deferred))"
    }
}
