/// Identifies one subscription inside a ``Mailroom``; never reused.
typealias SubscriptionID = UInt64

/// The type-erased face of ``Subscribers``, for routes whose element type is only known at post time.
protocol SubscriberList: AnyObject {
    var count: Int { get }
    func remove(_ id: SubscriptionID) -> (any Finishable)?
    func removeAll() -> [any Finishable]
}

/// The continuations of one route, kept in a dense array so that a post is a straight loop
/// and removal is O(1) (swap with the last; the order among subscribers carries no meaning).
///
/// Only ever touched while the owning ``Switchboard``'s lock is held.
final class Subscribers<Element: Sendable>: SubscriberList {
    /// The live continuations, in no particular order. Posts take a copy-on-write snapshot.
    private(set) var continuations: [AsyncStream<Element>.Continuation] = []
    /// `ids[i]` names `continuations[i]`, so a removal can fix up the moved entry's position.
    private var ids: [SubscriptionID] = []
    /// Where each subscription sits in `continuations`.
    private var positions: [SubscriptionID: Int] = [:]

    var count: Int { continuations.count }

    func add(_ continuation: AsyncStream<Element>.Continuation, id: SubscriptionID) {
        positions[id] = continuations.count
        continuations.append(continuation)
        ids.append(id)
    }

    /// Removes one subscription and hands back its continuation, which the caller must drop
    /// outside the lock: releasing a stream's last reference runs its termination handler.
    func remove(_ id: SubscriptionID) -> (any Finishable)? {
        guard let position = positions.removeValue(forKey: id) else { return nil }
        let last = continuations.count - 1
        if position != last {
            continuations.swapAt(position, last)
            ids.swapAt(position, last)
            positions[ids[position]] = position
        }
        ids.removeLast()
        return continuations.removeLast()
    }

    func removeAll() -> [any Finishable] {
        defer {
            continuations = []
            ids = []
            positions = [:]
        }
        return continuations
    }
}
