/// The histories of the rooms whose look-up key falls in one ``RouteShard`` (and, in the first
/// shard, of mail posted with no sender), once `retainHistory` opted the type in.
///
/// Only touched holding that shard's lock (see ``RouteTable`` on unchecked exclusivity). A value
/// room's history stays until `close()`; an object room's goes once its object has (swept as
/// object rooms are added, at amortised O(1) per room).
@usableFromInline
final class RoomHistories<M: Mail> {
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<RoomHistory<M>>()
    @usableFromInline @exclusivity(unchecked) var _byObject: [ObjectIdentifier: RoomHistory<M>] = [:]
    /// Mail posted with no sender (first shard only).
    @usableFromInline @exclusivity(unchecked) var _none: RoomHistory<M>?
    /// Object rooms after the last sweep of departed ones: sweeping again when they double.
    @usableFromInline @exclusivity(unchecked) var _objectRoomsAtSweep = 0

    @inlinable init() {}

    /// What ``find(_:key:)`` found: a room's history, which the caller may have to check is the
    /// sender's once the lock is released (a value room found by digest alone; see ``RoomCheck``).
    @usableFromInline
    enum Found {
        case none
        case verified(RoomHistory<M>)
        case unverified(ValueTable<RoomHistory<M>>.Entry)

        /// The history, if the check holds for `sender`.
        @inlinable
        func history<S: Sendable>(for sender: S?, key: SenderKey) -> RoomHistory<M>? {
            switch self {
            case .none: return nil
            case .verified(let history): return history
            case .unverified(let entry):
                guard case .value(let value) = key, let sender,
                    entry._sender.matches(sender, classifiedAs: value)
                else { return nil }
                return entry._value
            }
        }
    }

    /// The room's history, found by its look-up key; with user code (a sender's `==`) run only
    /// when two rooms share a digest.
    @inlinable
    func find(_ lookup: SenderKey.RoomLookup, key: SenderKey) -> Found {
        switch lookup {
        case .none:
            return _none.map { .verified($0) } ?? .none
        case .object(let id):
            guard let history = _byObject[id], !history.hasDeparted else { return .none }
            return .verified(history)
        case .value(let digest):
            switch _byValue.candidate(for: digest, key: key) {
            case .none: return .none
            case .unverified(let entry): return .unverified(entry)
            case .verified(let history): return history.map { .verified($0) } ?? .none
            }
        }
    }

    /// Whether `history` is still this shard's history at `key` (a room's history goes only with
    /// its departed object, or at `close()`).
    @inlinable
    func holds(_ history: RoomHistory<M>, at key: SenderKey) -> Bool {
        switch key {
        case .none: _none === history
        case .object(let sender): _byObject[sender._id] === history
        case .value: !history._isObjectRoom
        }
    }

    /// Makes the history of the room at `key`, with `room` its digest (worked out before the
    /// lock: it runs the sender's `description`), replacing a departed object's at the same
    /// address; returns it and what it displaced, to release once no lock is held.
    @usableFromInline
    func make(at key: SenderKey, epoch: UInt64, room: UInt32) -> (RoomHistory<M>, [RoomHistory<M>.Entry]) {
        switch key {
        case .none:
            let history = RoomHistory<M>(epoch: epoch, room: room, object: nil)
            _none = history
            return (history, [])
        case .value(let value):
            let history = RoomHistory<M>(epoch: epoch, room: room, object: nil)
            _byValue[value] = history
            return (history, [])
        case .object(let sender):
            let history = RoomHistory<M>(epoch: epoch, room: room, object: sender.object)
            var displaced = _byObject.updateValue(history, forKey: sender._id)?.takeAll() ?? []
            if _byObject.count > max(8, 2 * _objectRoomsAtSweep) {
                for (id, departed) in _byObject where departed.hasDeparted {
                    displaced += departed.takeAll()
                    _byObject[id] = nil
                }
                _objectRoomsAtSweep = _byObject.count
            }
            return (history, displaced)
        }
    }

    /// Every room's history.
    @usableFromInline
    var all: [RoomHistory<M>] { _byValue.values + Array(_byObject.values) + (_none.map { [$0] } ?? []) }

    /// Every room's history with its sender (nil for mail with no sender, or a departed object).
    @usableFromInline
    var allWithSenders: [(history: RoomHistory<M>, sender: Any?)] {
        _byValue.entries.map { ($0._value, $0._sender._value as Any) }
            + _byObject.values.map { ($0, $0._object.map { $0 as Any }) }
            + (_none.map { [($0, nil)] } ?? [])
    }

    /// The room's history, found with the sender's own `==` (run under the shard's lock: only
    /// when a post's room shares its digest with another room, or a subscription files).
    @usableFromInline
    func exact(_ key: SenderKey) -> RoomHistory<M>? {
        switch key {
        case .none: _none
        case .object(let sender): _byObject[sender._id].flatMap { $0.hasDeparted ? nil : $0 }
        case .value(let value): _byValue[value]
        }
    }

    /// Takes every kept mail out, for closing.
    @usableFromInline
    func takeAll() -> [RoomHistory<M>.Entry] {
        all.flatMap { $0.takeAll() }
    }
}

/// A room's digest in positions: FNV-1a of the sender's type and `String(reflecting:)` for a
/// value, so that every process that decodes the same room (a relay's instances) gives its
/// positions the same digest; a hash of the address for an object (objects do not cross
/// processes); 0 for mail with no sender. A check, not an identity: two rooms share a digest
/// by chance in one of 2^32, and then only the check is lost.
@usableFromInline
enum RoomDigest {
    @usableFromInline
    static func of(_ key: SenderKey) -> UInt32 {
        switch key {
        case .none: return 0
        case .object(let sender):
            return UInt32(truncatingIfNeeded: (UInt64(UInt(bitPattern: sender._id)) &* 0x9E37_79B9_7F4A_7C15) >> 32)
        case .value(let value):
            return fnv1a(String(reflecting: type(of: value._value)) + ":" + String(reflecting: value._value))
        }
    }

    /// FNV-1a of a string's UTF-8, stable across processes.
    @usableFromInline
    static func fnv1a(_ text: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return hash
    }
}
