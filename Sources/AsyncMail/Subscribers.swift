/// Identifies one subscription inside a ``Mailroom``; never reused.
typealias SubscriptionID = UInt64

/// One subscription as a post sees it: where to yield, and what it wants.
struct Subscriber<Element: Sendable>: Sendable {
    let id: SubscriptionID
    let continuation: AsyncStream<Element>.Continuation
    /// The subscription's post-time filter; `nil` takes everything that routes here.
    let accepts: (@Sendable (Element) -> Bool)?
}

/// The type-erased face of ``Subscribers``, for routes whose element type is only known at post time.
protocol SubscriberList: AnyObject {
    var count: Int { get }
    func remove(_ id: SubscriptionID) -> (any Finishable)?
    func removeAll() -> [any Finishable]
}

/// The subscriptions of one route, kept in a dense array so that a post is a straight loop
/// and removal is O(1) (swap with the last; the order among subscribers carries no meaning).
///
/// Only ever touched while the owning ``Switchboard``'s lock is held.
final class Subscribers<Element: Sendable>: SubscriberList {
    /// The live subscriptions, in no particular order. Posts take a copy-on-write snapshot.
    private(set) var entries: [Subscriber<Element>] = []
    /// Where each subscription sits in `entries`.
    private var positions: [SubscriptionID: Int] = [:]

    var count: Int { entries.count }

    func add(_ subscriber: Subscriber<Element>) {
        positions[subscriber.id] = entries.count
        entries.append(subscriber)
    }

    /// Removes one subscription and hands back its continuation, which the caller must drop
    /// outside the lock: releasing a stream's last reference runs its termination handler.
    func remove(_ id: SubscriptionID) -> (any Finishable)? {
        guard let position = positions.removeValue(forKey: id) else { return nil }
        let last = entries.count - 1
        if position != last {
            entries.swapAt(position, last)
            positions[entries[position].id] = position
        }
        return entries.removeLast().continuation
    }

    func removeAll() -> [any Finishable] {
        defer {
            entries = []
            positions = [:]
        }
        return entries.map(\.continuation)
    }
}
