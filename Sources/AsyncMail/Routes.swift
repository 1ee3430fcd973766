/// Which route of a mail type a subscription lives in, so its termination handler can find it.
enum Filter: Sendable {
    case everyone
    case object(ObjectIdentifier)
    case value(ValueSender)
    case senderType(ObjectIdentifier)
}

/// The type-erased face of ``Routes``, so one dictionary can hold the tables of every mail type.
protocol RouteTable: AnyObject {
    var count: Int { get }
    func remove(_ id: SubscriptionID, from filter: Filter) -> (any Finishable)?
    func removeAll() -> [any Finishable]
}

/// Subscriptions pinned to one object, which is held weakly so the subscription never keeps it alive.
final class ObjectRoute<M: Mail> {
    /// The sender; `nil` once it has been deallocated, which ends every subscription here.
    weak var sender: AnyObject?
    let subscribers = Subscribers<M>()

    init(sender: AnyObject) {
        self.sender = sender
    }
}

/// Every subscription to one mail type, indexed so a post touches only the ones that match.
///
/// Only ever touched while the owning ``Switchboard``'s lock is held.
final class Routes<M: Mail>: RouteTable {
    /// Subscriptions that take every mail of this type, from any sender or none.
    let everyone = Subscribers<M>()
    /// Subscriptions pinned to one object or actor, by identity.
    private var byObject: [ObjectIdentifier: ObjectRoute<M>] = [:]
    /// Subscriptions pinned to one `Hashable` sender value.
    private var byValue: [ValueSender: Subscribers<M>] = [:]
    /// Envelope subscriptions by sender type; the value for `S` is a `Subscribers<Envelope<M, S>>`.
    private var bySenderType: [ObjectIdentifier: any SubscriberList] = [:]
    /// Live subscriptions across all routes, so counting is O(1).
    private(set) var count = 0

    // MARK: Adding

    func addEveryone(_ continuation: AsyncStream<M>.Continuation, id: SubscriptionID) {
        everyone.add(continuation, id: id)
        count += 1
    }

    /// Returns the subscriptions of a departed sender whose address `sender` now reuses; finish them.
    func addObject(
        _ continuation: AsyncStream<M>.Continuation,
        id: SubscriptionID,
        sender: AnyObject
    ) -> [any Finishable] {
        let key = ObjectIdentifier(sender)
        var departed: [any Finishable] = []
        let route: ObjectRoute<M>
        if let existing = byObject[key], existing.sender === sender {
            route = existing
        } else {
            if let stale = byObject[key] { departed = takeAll(of: stale) }
            route = ObjectRoute(sender: sender)
            byObject[key] = route
        }
        route.subscribers.add(continuation, id: id)
        count += 1
        return departed
    }

    func addValue(_ continuation: AsyncStream<M>.Continuation, id: SubscriptionID, sender: ValueSender) {
        let subscribers: Subscribers<M>
        if let existing = byValue[sender] {
            subscribers = existing
        } else {
            subscribers = Subscribers()
            byValue[sender] = subscribers
        }
        subscribers.add(continuation, id: id)
        count += 1
    }

    func addSenderType<S: Sendable>(
        _ continuation: AsyncStream<Envelope<M, S>>.Continuation,
        id: SubscriptionID
    ) {
        let key = ObjectIdentifier(S.self)
        let subscribers: Subscribers<Envelope<M, S>>
        if let existing = bySenderType[key] {
            // The key is `S`'s identity, so the stored list is exactly this type.
            subscribers = unsafeDowncast(existing, to: Subscribers<Envelope<M, S>>.self)
        } else {
            subscribers = Subscribers()
            bySenderType[key] = subscribers
        }
        subscribers.add(continuation, id: id)
        count += 1
    }

    // MARK: Delivering

    /// The subscriptions that mail posted by `sender` must reach: unfiltered, pinned to this
    /// sender, and subscribed to its type. Pass `nil` for mail posted without a sender.
    func recipients<S: Sendable>(from sender: S?, key: SenderKey) -> Recipients<M, S> {
        var recipients = Recipients<M, S>(everyone: everyone.continuations)
        switch key {
        case .object(let object):
            if let route = byObject[ObjectIdentifier(object)], route.sender === object {
                recipients.pinned = route.subscribers.continuations
            }
        case .value(let value):
            recipients.pinned = byValue[value]?.continuations ?? []
        case .none:
            break
        }
        if sender != nil, !bySenderType.isEmpty, let list = bySenderType[ObjectIdentifier(S.self)] {
            recipients.bySenderType = unsafeDowncast(list, to: Subscribers<Envelope<M, S>>.self).continuations
        }
        return recipients
    }

    // MARK: Removing

    /// Removes the routes of senders that have been deallocated and returns their continuations to finish.
    func sweepDepartedSenders() -> [any Finishable] {
        guard !byObject.isEmpty, byObject.values.contains(where: { $0.sender == nil }) else { return [] }
        var departed: [any Finishable] = []
        for (key, route) in byObject where route.sender == nil {
            departed += takeAll(of: route)
            byObject[key] = nil
        }
        return departed
    }

    func remove(_ id: SubscriptionID, from filter: Filter) -> (any Finishable)? {
        let removed: (any Finishable)?
        switch filter {
        case .everyone:
            removed = everyone.remove(id)
        case .object(let key):
            guard let route = byObject[key] else { return nil }
            removed = route.subscribers.remove(id)
            if route.subscribers.count == 0 { byObject[key] = nil }
        case .value(let key):
            guard let subscribers = byValue[key] else { return nil }
            removed = subscribers.remove(id)
            if subscribers.count == 0 { byValue[key] = nil }
        case .senderType(let key):
            guard let subscribers = bySenderType[key] else { return nil }
            removed = subscribers.remove(id)
            if subscribers.count == 0 { bySenderType[key] = nil }
        }
        if removed != nil { count -= 1 }
        return removed
    }

    func removeAll() -> [any Finishable] {
        var all = everyone.removeAll()
        for route in byObject.values { all += route.subscribers.removeAll() }
        for subscribers in byValue.values { all += subscribers.removeAll() }
        for subscribers in bySenderType.values { all += subscribers.removeAll() }
        byObject = [:]
        byValue = [:]
        bySenderType = [:]
        count = 0
        return all
    }

    private func takeAll(of route: ObjectRoute<M>) -> [any Finishable] {
        let taken = route.subscribers.removeAll()
        count -= taken.count
        return taken
    }
}
