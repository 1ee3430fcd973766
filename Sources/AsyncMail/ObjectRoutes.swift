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
/// weak references, each a likely cache miss. Checking all of them on every post would make a
/// post's cost grow with their number. Checking one per post keeps posts O(1), but that one cold
/// read still shows beside many pinned objects. Checking a batch of consecutive routes every so
/// many posts does the same number of checks, and the batch's reads overlap and follow
/// allocation order (figures in `Benchmarks/README.md`).
@usableFromInline
struct ObjectRoutes<M: Mail> {
    /// Every route, in no particular order.
    @usableFromInline var routes: [ObjectRoute<M>] = []
    /// Where each route sits in `routes`.
    @usableFromInline var positions: [ObjectIdentifier: Int] = [:]
    /// The next route a budgeted sweep will check. Sweeps walk down from the top, one round at a
    /// time: routes above the cursor were checked this round (or pinned since it began), routes at
    /// or below it were not. Negative, or past the end, means: go on from the top.
    @usableFromInline var cursor = -1
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
    /// That is one check per post on average. A round of checks walks every route once, and
    /// removing a route moves the last one (already checked this round) into its place, so no
    /// check is spent twice in a round. Hence, with `n` routes and no new ones pinned, a sender
    /// that departs is found within `n` checks: within `n` posts when `n <= batch`, and within
    /// `n + batch - 1` posts otherwise (the last batch may start just before it departs).
    @inlinable
    mutating func sweepAfterPost(batch: Int) -> [ObjectRoute<M>] {
        postsSinceSweep += 1
        let due = min(batch, routes.count)
        guard postsSinceSweep >= due else { return [] }
        postsSinceSweep = 0
        var departed: [ObjectRoute<M>] = []
        for _ in 0..<due {
            if cursor < 0 || cursor >= routes.count { cursor = routes.count - 1 }
            guard cursor >= 0 else { break }
            let route = routes[cursor]
            // Removing moves the last route, which this round has checked, into `cursor`.
            if route.sender == nil {
                departed.append(route)
                remove(route.key)
            }
            cursor -= 1
        }
        return departed
    }

    /// Removes and returns every route whose sender is gone.
    @inlinable
    mutating func removeAllDeparted() -> [ObjectRoute<M>] {
        var departed: [ObjectRoute<M>] = []
        // From the top down: removing moves the last route, already checked, into the gap.
        for position in routes.indices.reversed() where routes[position].sender == nil {
            departed.append(routes[position])
            remove(routes[position].key)
        }
        return departed
    }

    @usableFromInline
    mutating func removeAll() -> [ObjectRoute<M>] {
        defer {
            routes = []
            positions = [:]
            cursor = -1
            postsSinceSweep = 0
        }
        return routes
    }
}
