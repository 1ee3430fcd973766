/// What a ``Mailroom/post(_:)`` did: how many subscriptions took the mail, lost one, or ended.
///
/// For every subscription that matched the post, exactly one of three counts goes up,
/// so `delivered + dropped + ended` is the number of matching subscriptions (``matched``):
/// - `delivered`: the mail was handed to a waiting consumer or buffered for it.
/// - `dropped`: the subscription's bounded buffer was full, so a mail was lost. With
///   `.bufferingOldest(n)` or `.droppingNewest(past: n)` the lost mail is this one; with
///   `.bufferingNewest(n)` or `.droppingOldest(past: n)` this mail was buffered and the oldest
///   buffered mail was evicted to make room. A dropping backlog (a ``DroppingStream``) also
///   tells its consumer, in order, with the same count.
/// - `ended`: the subscription had a backlog limit (a ``BoundedStream``) and its buffer was
///   full, so instead of losing mail it ended, and it was removed before the post returned.
///
/// A subscription that ends while the post is in flight counts in neither: its consumer
/// has already stopped listening.
///
/// A ``Mailroom/postSynchronously(_:)`` made while the same thread is delivering another post
/// of the same mailroom (from a `where:` filter, or from the deinit of a mail that delivery
/// released) cannot be delivered in the middle of that post without breaking the order its
/// subscribers share. It is *deferred*: its receipt counts its mail in `deferred` and
/// nothing else, and the same thread delivers it, as an ordinary post, right after the one in
/// progress.
public struct Receipt: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Subscriptions that received the mail (handed over or buffered).
    public var delivered: Int
    /// Subscriptions whose full buffer lost a mail because of this post.
    public var dropped: Int
    /// Subscriptions this post ended because their consumer passed its backlog limit.
    public var ended: Int
    /// Mails whose delivery waits for the post in progress on this thread; see above.
    public var deferred: Int

    /// Creates a receipt with the given counts.
    public init(delivered: Int = 0, dropped: Int = 0, ended: Int = 0, deferred: Int = 0) {
        self.delivered = delivered
        self.dropped = dropped
        self.ended = ended
        self.deferred = deferred
    }

    /// The number of subscriptions that matched the post.
    public var matched: Int { delivered + dropped + ended }

    /// Adds two receipts, for totals over several posts.
    public static func + (lhs: Receipt, rhs: Receipt) -> Receipt {
        Receipt(
            delivered: lhs.delivered + rhs.delivered,
            dropped: lhs.dropped + rhs.dropped,
            ended: lhs.ended + rhs.ended,
            deferred: lhs.deferred + rhs.deferred
        )
    }

    /// Adds a receipt to a running total.
    public static func += (lhs: inout Receipt, rhs: Receipt) {
        lhs = lhs + rhs
    }

    /// Reads like the initialiser call that would make the same receipt.
    public var description: String {
        var counts = "delivered: \(delivered), dropped: \(dropped)"
        if ended != 0 { counts += ", ended: \(ended)" }
        if deferred != 0 { counts += ", deferred: \(deferred)" }
        return "Receipt(\(counts))"
    }
}
