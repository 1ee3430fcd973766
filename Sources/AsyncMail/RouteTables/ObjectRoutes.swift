/// Subscriptions pinned to one object, which is held weakly so the subscription never keeps it alive.
@usableFromInline
final class ObjectRoute<M: Mail> {
    /// The sender; `nil` once it has been deallocated, which ends every subscription here.
    /// Never reassigned: a `let` is read without the run-time exclusivity check that a class's
    /// `var` costs on every read, which a post to an object room makes twice.
    @usableFromInline weak let _sender: AnyObject?
    /// The sender's identity, kept because `sender` forgets it when the object goes.
    @usableFromInline let _key: ObjectIdentifier
    @usableFromInline let _subscribers = SubscriberList<M>(isRoom: true)

    @usableFromInline
    init(sender: AnyObject) {
        self._sender = sender
        self._key = ObjectIdentifier(sender)
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
    @usableFromInline var _routes: [ObjectRoute<M>] = []
    /// Where each route sits in `routes`.
    @usableFromInline var _positions: [Address: Int] = [:]
    /// The next route a budgeted sweep will check. Sweeps walk down from the top, one round at a
    /// time: routes above the cursor were checked this round (or pinned since it began), routes at
    /// or below it were not. Negative, or past the end, means: go on from the top.
    @usableFromInline var _cursor = -1

    @inlinable init() {}

    @inlinable var isEmpty: Bool { _routes.isEmpty }

    @inlinable
    subscript(key: ObjectIdentifier) -> ObjectRoute<M>? {
        _positions[Address(key)].map { _routes[$0] }
    }

    /// Adds a route, replacing any route whose (departed) sender had the same address.
    /// Returns the replaced route.
    @inlinable
    mutating func insert(_ route: ObjectRoute<M>) -> ObjectRoute<M>? {
        if let position = _positions[Address(route._key)] {
            defer { _routes[position] = route }
            return _routes[position]
        }
        _positions[Address(route._key)] = _routes.count
        _routes.append(route)
        return nil
    }

    @inlinable @discardableResult
    mutating func remove(_ key: ObjectIdentifier) -> ObjectRoute<M>? {
        guard let position = _positions.removeValue(forKey: Address(key)) else { return nil }
        let last = _routes.count - 1
        if position != last {
            _routes.swapAt(position, last)
            _positions[Address(_routes[position]._key)] = position
        }
        return _routes.removeLast()
    }

    /// Checks `budget` routes for a departed sender, going on round after round from where the
    /// last check stopped, and removes and returns those whose sender is gone.
    @inlinable
    mutating func sweep(budget: Int) -> [ObjectRoute<M>] {
        var departed: [ObjectRoute<M>] = []
        var remaining = budget
        while remaining > 0 {
            let swept = sweep(checking: remaining)
            departed += swept.departed
            remaining -= swept.checked
            if swept.checked == 0 { break }
        }
        return departed
    }

    /// Checks up to `budget` routes for a departed sender, going on down from where the last
    /// check stopped, and removes those whose sender is gone. `finished` says the round reached
    /// the bottom: the next call starts a new round from the top.
    @inlinable
    mutating func sweep(checking budget: Int) -> (departed: [ObjectRoute<M>], checked: Int, finished: Bool) {
        if _cursor < 0 || _cursor >= _routes.count { _cursor = _routes.count - 1 }
        var departed: [ObjectRoute<M>] = []
        var checked = 0
        while checked < budget, _cursor >= 0 {
            let route = _routes[_cursor]
            // Removing moves the last route, which this round has checked, into `cursor`.
            if route._sender == nil {
                departed.append(route)
                remove(route._key)
            }
            _cursor -= 1
            checked += 1
        }
        return (departed, checked, _cursor < 0)
    }

    /// Removes and returns every route whose sender is gone.
    @inlinable
    mutating func removeAllDeparted() -> [ObjectRoute<M>] {
        var departed: [ObjectRoute<M>] = []
        // From the top down: removing moves the last route, already checked, into the gap.
        for position in _routes.indices.reversed() where _routes[position]._sender == nil {
            departed.append(_routes[position])
            remove(_routes[position]._key)
        }
        return departed
    }

    @usableFromInline
    mutating func removeAll() -> [ObjectRoute<M>] {
        defer {
            _routes = []
            _positions = [:]
            _cursor = -1
        }
        return _routes
    }
}
