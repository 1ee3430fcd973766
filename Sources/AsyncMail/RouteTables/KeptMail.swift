/// The mail a type keeps for the rooms whose look-up key falls in one ``RouteShard`` (and, in
/// the first shard, for mail posted with no sender): one ``KeptRoom`` per room, once
/// ``Mailroom/retainLatest(_:)`` or `retainHistory` opted the type in.
///
/// Only touched holding that shard's lock (see ``RouteTable`` on unchecked exclusivity). A value
/// room stays until `close()`; an object room goes once its object has: nobody can name it. The
/// table counts object rooms across its shards and sweeps departed ones when they double (see
/// ``RouteTable/objectRoomAdded()``), at amortised O(1) per room.
@usableFromInline
final class KeptMail<M: Mail> {
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<KeptRoom<M>>()
    @usableFromInline @exclusivity(unchecked) var _byObject: [ObjectIdentifier: KeptRoom<M>] = [:]
    /// Mail posted with no sender (first shard only).
    @usableFromInline @exclusivity(unchecked) var _none: KeptRoom<M>?

    @inlinable init() {}

    /// What ``find(_:sender:)`` found: a room, which the caller may have to check is the sender's
    /// once the lock is released (a value room found by digest alone; see ``RoomCheck``).
    @usableFromInline
    enum Found {
        case none
        case verified(KeptRoom<M>)
        case unverified(ValueTable<KeptRoom<M>>.Entry)

        /// The room, if the check holds for `sender`.
        @inlinable
        func room<S: Sendable>(for sender: S?, lookup: SenderKey.RoomLookup) -> KeptRoom<M>? {
            switch self {
            case .none: return nil
            case .verified(let room): return room
            case .unverified(let entry):
                guard case .value(let digest) = lookup, let sender, entry._sender.matches(sender, digest: digest)
                else { return nil }
                return entry._value
            }
        }

        /// Whether the room found has its digest (see ``KeptRoom/_room``).
        @inlinable var hasDigest: Bool {
            switch self {
            case .none: false
            case .verified(let room): room._room != nil
            case .unverified(let entry): entry._value._room != nil
            }
        }
    }

    /// The room, found by its look-up key; with user code (a sender's `==`) run only when two
    /// rooms share a digest.
    @inlinable
    func find<S: Sendable>(_ lookup: SenderKey.RoomLookup, sender: S?) -> Found {
        switch lookup {
        case .none:
            return _none.map { .verified($0) } ?? .none
        case .object(let id):
            guard let room = _byObject[id], !room.hasDeparted else { return .none }
            return .verified(room)
        case .value(let digest):
            switch _byValue.candidate(for: digest, sender: sender) {
            case .none: return .none
            case .unverified(let entry): return .unverified(entry)
            case .verified(let room): return room.map { .verified($0) } ?? .none
            }
        }
    }

    /// Whether `room` is still this shard's room at `key` (a room goes only with its departed
    /// object, or at `close()`).
    @inlinable
    func holds(_ room: KeptRoom<M>, at key: SenderKey) -> Bool {
        switch key {
        case .none: _none === room
        case .object(let sender): _byObject[sender._id] === room
        case .value: !room._isObjectRoom
        }
    }

    /// The room at `key`, found with the sender's own `==` (run under the shard's lock: only when
    /// a post's room shares its digest with another room, or a subscription files).
    @usableFromInline
    func exact(_ key: SenderKey) -> KeptRoom<M>? {
        switch key {
        case .none: _none
        case .object(let sender): _byObject[sender._id].flatMap { $0.hasDeparted ? nil : $0 }
        case .value(let value): _byValue[value]
        }
    }

    /// What ``room(at:epoch:digest:)`` found or made.
    @usableFromInline
    struct Made {
        @usableFromInline let _room: KeptRoom<M>
        /// A departed object's room at the same address, to release once no lock is held.
        @usableFromInline var _replaced: KeptRoom<M>?
        /// Whether it made an object room (see ``RouteTable/objectRoomAdded()``).
        @usableFromInline var _isNewObjectRoom = false

        @inlinable init(_ room: KeptRoom<M>) { _room = room }
    }

    /// The room at `key`, made (in `epoch`, with `digest`) if there is none, replacing a departed
    /// object's room at the same address.
    @inlinable
    func room(at key: SenderKey, epoch: UInt64, digest: UInt32?) -> Made {
        if let room = exact(key) { return Made(room) }
        switch key {
        case .none:
            let room = KeptRoom<M>(epoch: epoch, room: digest, object: nil)
            _none = room
            return Made(room)
        case .value(let value):
            let room = KeptRoom<M>(epoch: epoch, room: digest, object: nil)
            _byValue[value] = room
            return Made(room)
        case .object(let sender):
            var made = Made(KeptRoom<M>(epoch: epoch, room: digest, object: sender.object))
            made._replaced = _byObject.updateValue(made._room, forKey: sender._id)
            made._isNewObjectRoom = made._replaced == nil
            return made
        }
    }

    /// Every room.
    @usableFromInline
    var all: [KeptRoom<M>] { _byValue.values + Array(_byObject.values) + (_none.map { [$0] } ?? []) }

    /// Every room with its sender (nil for mail with no sender, or a departed object).
    @usableFromInline
    var allWithSenders: [(room: KeptRoom<M>, sender: Any?)] {
        _byValue.entries.map { ($0._value, $0._sender._value as Any) }
            + _byObject.values.map { ($0, $0._object.map { $0 as Any }) }
            + (_none.map { [($0, nil)] } ?? [])
    }

    /// The latest mail kept from a sender that is an `S` (by a cast, so a subclass or a type
    /// conforming to a protocol `S` counts), with that sender and its stamp, if it is newer than
    /// `stamp`; nil when there is none.
    ///
    /// Only object and value senders have rooms, so mail from other senders (a struct that is not
    /// `Hashable`) is never found here. O(rooms): subscribing only.
    @usableFromInline
    func latest<S: Sendable>(fromAny senderType: S.Type, after stamp: UInt64) -> (Envelope<M, S>, stamp: UInt64)? {
        var newest: (Envelope<M, S>, stamp: UInt64)?
        for (room, sender) in allWithSenders where room._latestStamp > newest?.stamp ?? stamp {
            if let mail = room._latest, let sender = sender as? S {
                newest = (Envelope(mail: mail, sender: sender), room._latestStamp)
            }
        }
        return newest
    }

    /// Takes the rooms of object senders that are gone out (nobody can name them any more), to
    /// release once no lock is held.
    @usableFromInline
    func sweepDeparted() -> [KeptRoom<M>] {
        var departed: [KeptRoom<M>] = []
        _byObject = _byObject.filter { entry in
            guard entry.value.hasDeparted else { return true }
            departed.append(entry.value)
            return false
        }
        return departed
    }

    /// Whether nothing is kept.
    @usableFromInline var isEmpty: Bool { _byValue.isEmpty && _byObject.isEmpty && _none == nil }
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
