import Synchronization

/// The type-erased face of ``SubscriberList``, for routes whose element type is only known at post time.
@usableFromInline
protocol AnySubscriberList: AnyObject, Sendable {
    var count: Int { get }
    /// Removes `subscriber` if it is one of this list's; see ``SubscriberList/remove(_:)``.
    func removeErased(_ subscriber: AnyObject) -> (any Finishable)?
    func removeAll() -> [any Finishable]
    /// A snapshot of this list, which holds envelopes of `M`, that yields a mail and its sender
    /// to every subscription in it. For senders whose type is not the list's own sender type.
    func envelopes<M: Mail>(of type: M.Type, from sender: any Sendable) -> EnvelopeDelivery<M>
    /// Whether `sender` is of this envelope list's sender type (a cast, so supertypes count).
    func isSenderType(of sender: Any) -> Bool
    /// A snapshot of this list, which holds positioned envelopes of `M`, that yields a mail, its
    /// sender and its position to every subscription in it.
    func positionedEnvelopes<M: Mail>(of type: M.Type, from sender: any Sendable) -> PositionedDelivery<M>
}

/// A ``Positioned`` envelope made from a type-erased mail and sender.
private protocol ErasedPositionedEnvelope: Sendable {
    init?(mail: Any, sender: Any, position: MailPosition)
    static func isSender(_ sender: Any) -> Bool
}

extension Positioned: ErasedPositionedEnvelope where M: ErasedEnvelope {
    fileprivate init?(mail: Any, sender: Any, position: MailPosition) {
        guard let envelope = M(mail: mail, sender: sender) else { return nil }
        self.init(mail: envelope, position: position)
    }

    fileprivate static func isSender(_ sender: Any) -> Bool { M.isSender(sender) }
}

/// An ``Envelope`` made from a type-erased mail and sender.
private protocol ErasedEnvelope: Sendable {
    init?(mail: Any, sender: Any)
    static func isSender(_ sender: Any) -> Bool
}

extension Envelope: ErasedEnvelope {
    fileprivate init?(mail: Any, sender: Any) {
        guard let mail = mail as? M, let sender = sender as? S else { return nil }
        self.init(mail: mail, sender: sender)
    }

    fileprivate static func isSender(_ sender: Any) -> Bool { sender is S }
}

/// The subscriptions of one route, kept in a dense array so that a post is a straight loop
/// and removal is O(1) (swap with the last; the order among subscribers carries no meaning).
/// A room's list (one sender's subscriptions) also carries the room's lane (see ``Lanes``).
///
/// Why `@unchecked Sendable` is safe: `entries`, its one mutable property, is only read or
/// written while the lock that guards the list is held (a room's list: its ``RouteShard``'s lock;
/// a list that hears several rooms: any shard's lock to read, all of them to write; the taps: the
/// registry lock), which orders every access; posts read a copy-on-write
/// snapshot taken under it. That is also why `entries` skips dynamic exclusivity checks (see
/// ``RouteTable``). The stress and model tests, run under ThreadSanitizer in CI, post, subscribe
/// and drop from many threads at once.
@usableFromInline
final class SubscriberList<Element: Sendable>: AnySubscriberList, @unchecked Sendable {
    /// The live subscriptions, in no particular order. Posts take a copy-on-write snapshot.
    @usableFromInline @exclusivity(unchecked) var _entries: [Subscriber<Element>] = []
    /// Held by every post to this list's room while it yields (see ``Lanes``); nil for a list
    /// that is not a room's, which no post holds (a lane is a padded allocation of its own).
    @usableFromInline let _lane: Lane?
    /// A room's subscriptions with positions (see `RouteTable+History.swift`): a
    /// `SubscriberList<Positioned<M>>`, made with the first; nil for every other list.
    @usableFromInline @exclusivity(unchecked) var _positioned: (any AnySubscriberList)?

    /// A list; a room's (`isRoom`) has a lane.
    @inlinable init(isRoom: Bool = false) {
        _lane = isRoom ? Lane() : nil
    }

    /// Its subscriptions, those with positions too.
    @inlinable var count: Int { _positioned.map { _entries.count + $0.count } ?? _entries.count }

    /// Whether it has no subscription: a room then goes.
    @inlinable var isEmpty: Bool { _entries.isEmpty && (_positioned?.count ?? 0) == 0 }

    @inlinable
    func add(_ subscriber: Subscriber<Element>) {
        subscriber._position.store(_entries.count, ordering: .relaxed)
        _entries.append(subscriber)
    }

    /// Removes one subscription and hands back its continuation, which the caller must drop
    /// outside the lock: releasing a stream's last reference runs its termination handler.
    /// Returns nil when it has already been removed.
    @inlinable
    func remove(_ subscriber: Subscriber<Element>) -> (any Finishable)? {
        let position = subscriber._position.load(ordering: .relaxed)
        // -1: already removed. Otherwise the subscriber sits at `position` in this very list: a
        // subscription's route names exactly one list, the one it was filed in, and every way out
        // of a list (`remove`, `removeAll`) resets the position to -1 first. So an identity check
        // here could never fail; the assertion keeps the invariant checked in debug builds.
        guard _entries.indices.contains(position) else { return nil }
        assert(_entries[position] === subscriber, "a subscription's route names the one list it is in")
        let last = _entries.count - 1
        if position != last {
            _entries.swapAt(position, last)
            _entries[position]._position.store(position, ordering: .relaxed)
        }
        subscriber._position.store(-1, ordering: .relaxed)
        return _entries.removeLast()._continuation
    }

    @usableFromInline
    func removeErased(_ subscriber: AnyObject) -> (any Finishable)? {
        guard let subscriber = subscriber as? Subscriber<Element> else { return nil }
        return remove(subscriber)
    }

    @usableFromInline
    func envelopes<M: Mail>(of type: M.Type, from sender: any Sendable) -> EnvelopeDelivery<M> {
        let entries = self._entries
        let maker = Element.self as? any ErasedEnvelope.Type
        return EnvelopeDelivery { delivery, context, receipt in
            switch delivery {
            case .mail(let mail):
                guard let envelope = maker?.init(mail: mail, sender: sender) as? Element else { return }
                Recipients<M, Never>.yield(envelope, to: entries, context: context, into: &receipt)
            case .lost(let loss):
                for subscriber in entries { subscriber.tell(loss) }
            }
        }
    }

    @usableFromInline
    func isSenderType(of sender: Any) -> Bool {
        (Element.self as? any ErasedEnvelope.Type)?.isSender(sender)
            ?? (Element.self as? any ErasedPositionedEnvelope.Type)?.isSender(sender) ?? false
    }

    @usableFromInline
    func positionedEnvelopes<M: Mail>(of type: M.Type, from sender: any Sendable) -> PositionedDelivery<M> {
        let entries = self._entries
        let maker = Element.self as? any ErasedPositionedEnvelope.Type
        return PositionedDelivery { delivery, position, context, receipt in
            switch delivery {
            case .mail(let mail):
                guard let positioned = maker?.init(mail: mail, sender: sender, position: position) as? Element else {
                    return
                }
                Recipients<M, Never>.yield(positioned, to: entries, context: context, into: &receipt)
            case .lost(let loss):
                for subscriber in entries { subscriber.tell(loss) }
            }
        }
    }

    @usableFromInline
    func removeAll() -> [any Finishable] {
        defer { _entries = [] }
        let positioned = _positioned?.removeAll() ?? []
        return positioned
            + _entries.map { subscriber in
                subscriber._position.store(-1, ordering: .relaxed)
                return subscriber._continuation
            }
    }
}
