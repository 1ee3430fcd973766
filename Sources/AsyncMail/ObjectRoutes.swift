/// Subscriptions pinned to one object, which is held weakly so the subscription never keeps it alive.
@usableFromInline
final class ObjectRoute<M: Mail> {
    /// The sender; `nil` once it has been deallocated, which ends every subscription here.
    @usableFromInline weak var sender: AnyObject?
    /// The sender's identity, kept because `sender` forgets it when the object goes.
    @usableFromInline let key: ObjectIdentifier
    @usableFromInline let subscribers = Subscribers<M>()

    @usableFromInline
    init(sender: AnyObject) {
        self.sender = sender
        self.key = ObjectIdentifier(sender)
    }
}

/// The object-pinned routes of one mail type: by identity for posting, and in an array so that
/// departed senders can be looked for a batch at a time, round-robin.
///
/// Swift has no hook for an object's deallocation, so finding departed senders means reading
/// weak references, each a likely cache miss. Checking all of them on every post made a post
/// cost 1.7 ms with 10,000 pinned objects. Checking one per post kept posts O(1), but that one
/// cold read still made a post beside 10,000 pinned objects 1.22–1.28x one alone. Checking a
/// batch of consecutive routes every so many posts does the same number of checks, and the
/// batch's reads overlap and follow allocation order: 1.03–1.09x (see `Benchmarks/README.md`).
@usableFromInline
struct ObjectRoutes<M: Mail> {
    /// Every route, in no particular order.
    @usableFromInline var routes: [ObjectRoute<M>] = []
    /// Where each route sits in `routes`.
    @usableFromInline var positions: [ObjectIdentifier: Int] = [:]
    /// The next route a budgeted sweep will check.
    @usableFromInline var cursor = 0
    /// Posts since the last batched sweep (see ``sweepAfterPost(batch:)``).
    @usableFromInline var postsSinceSweep = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { routes.isEmpty }

    @inlinable
    subscript(key: ObjectIdentifier) -> ObjectRoute<M>? {
        positions[key].map { routes[$0] }
    }

    /// Adds a route, replacing any route whose (departed) sender had the same address.
    /// Returns the replaced route.
    @inlinable
    mutating func insert(_ route: ObjectRoute<M>) -> ObjectRoute<M>? {
        if let position = positions[route.key] {
            defer { routes[position] = route }
            return routes[position]
        }
        positions[route.key] = routes.count
        routes.append(route)
        return nil
    }

    @inlinable @discardableResult
    mutating func remove(_ key: ObjectIdentifier) -> ObjectRoute<M>? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        let last = routes.count - 1
        if position != last {
            routes.swapAt(position, last)
            positions[routes[position].key] = position
        }
        return routes.removeLast()
    }

    /// Counts a post and, once every `min(batch, routes.count)` posts, checks that many routes
    /// for a departed sender; returns the routes removed.
    ///
    /// On average that is one check per post, so with `n` routes each is checked within `n`
    /// posts when `n <= batch`, and within `n + batch - 1` posts otherwise.
    @inlinable
    mutating func sweepAfterPost(batch: Int) -> [ObjectRoute<M>] {
        postsSinceSweep += 1
        let due = min(batch, routes.count)
        guard postsSinceSweep >= due else { return [] }
        postsSinceSweep = 0
        return removeDeparted(budget: due)
    }

    /// Removes and returns routes whose sender is gone, checking at most `budget` routes
    /// (all of them when `budget` is nil).
    @inlinable
    mutating func removeDeparted(budget: Int?) -> [ObjectRoute<M>] {
        var departed: [ObjectRoute<M>] = []
        var checks = min(budget ?? routes.count, routes.count)
        while checks > 0, !routes.isEmpty {
            checks -= 1
            if cursor >= routes.count { cursor = 0 }
            let route = routes[cursor]
            if route.sender == nil {
                // The last route moves into `cursor`, so the cursor stays to check it next.
                departed.append(route)
                remove(route.key)
            } else {
                cursor += 1
            }
        }
        return departed
    }

    @usableFromInline
    mutating func removeAll() -> [ObjectRoute<M>] {
        defer {
            routes = []
            positions = [:]
            cursor = 0
            postsSinceSweep = 0
        }
        return routes
    }
}
