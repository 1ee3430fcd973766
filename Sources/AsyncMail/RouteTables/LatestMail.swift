/// The latest mail of one type, kept after ``Mailroom/retainLatest(_:)`` opts the type in.
///
/// A class, not a struct: a post checks whether its type keeps mail on every call, and in
/// unspecialised generic code a nil check on a struct of this size copies it through value
/// witnesses, which made every post measurably slower; a reference makes it a pointer check.
///
/// One per ``RouteShard``, for the senders whose rooms fall in it. Only ever touched while that
/// shard's lock is held, which is why its mutable properties skip dynamic exclusivity checks (see
/// ``RouteTable``). Each kept mail carries a serial number the table counts across shards, so
/// that the type's newest is the one with the highest.
@usableFromInline
final class LatestMail<M: Mail> {
    /// A mail kept for an object sender, which is held weakly.
    @usableFromInline
    final class FromObject {
        @usableFromInline weak var _sender: AnyObject?
        @usableFromInline var _mail: M
        /// When it was posted, to find the newest among senders (see ``newest(fromAny:)``).
        @usableFromInline var _serial: Int

        @usableFromInline
        init(sender: AnyObject, mail: M, serial: Int) {
            self._sender = sender
            self._mail = mail
            self._serial = serial
        }
    }

    /// A mail kept for a value sender, and when it was posted.
    @usableFromInline
    struct FromValue {
        @usableFromInline var _mail: M
        @usableFromInline var _serial: Int

        @inlinable
        init(mail: M, serial: Int) {
            self._mail = mail
            self._serial = serial
        }
    }

    /// The newest mail of the type, whatever its sender, in a box of its own, so that a
    /// ``RouteTable`` can swap it atomically (see ``RouteTable/recordNewest(_:)``).
    @usableFromInline
    final class Newest: Sendable {
        @usableFromInline let _mail: M

        @inlinable init(_ mail: M) { _mail = mail }
    }

    /// Kept mail that one change replaced or dropped, handed back so that it is released once
    /// no lock is held: a mail's deinit is user code.
    @usableFromInline
    struct Displaced: Sendable {
        @usableFromInline var _newest: M?
        @usableFromInline var _fromSender: M?
        @usableFromInline var _swept: [M] = []
        /// Whether the change kept mail for one more object sender (see ``RouteTable``'s count).
        @usableFromInline var _addedObjectSender = false

        @inlinable init() {}
    }
    /// The newest mail per value sender; one per distinct value, kept until close().
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<FromValue>()
    /// The newest mail per object sender, dropped once the sender is gone.
    @usableFromInline @exclusivity(unchecked) var _byObject: [ObjectIdentifier: FromObject] = [:]
    @usableFromInline init() {}

    /// Keeps `mail` as the newest from its sender, as posted at `serial`; returns what it replaced.
    /// (The type's newest, whatever the sender, is the table's: see ``RouteTable/recordNewest(_:)``.)
    @inlinable
    func record(_ mail: M, key: SenderKey, serial: Int) -> Displaced {
        var displaced = Displaced()
        switch key {
        case .none:
            break
        case .value(let value):
            displaced._fromSender = _byValue[value]?._mail
            _byValue[value] = FromValue(mail: mail, serial: serial)
        case .object(let sender):
            // A live sender at the kept sender's address is the kept sender (see RouteTable.recipients).
            if let kept = _byObject[sender._id], kept._sender != nil {
                displaced._fromSender = kept._mail
                kept._mail = mail
                kept._serial = serial
            } else {
                let kept = FromObject(sender: sender.object, mail: mail, serial: serial)
                // A departed sender's entry at the same address: released after unlocking.
                if let departed = _byObject.updateValue(kept, forKey: sender._id) {
                    displaced._swept.append(departed._mail)
                } else {
                    displaced._addedObjectSender = true
                }
            }
        }
        return displaced
    }

    /// The newest mail from this sender, if any.
    @usableFromInline
    func newest(from key: SenderKey) -> M? {
        switch key {
        case .none: nil
        case .value(let value): _byValue[value]?._mail
        case .object(let sender):
            _byObject[sender._id].flatMap { $0._sender != nil ? $0._mail : nil }
        }
    }

    /// The newest mail kept from a sender that is an `S` (by a cast, so a subclass or a type
    /// conforming to a protocol `S` counts), with that sender and its serial, if it is newer than
    /// `serial`; nil when there is none.
    ///
    /// Only object and value senders have mail kept per sender, so mail from other senders (a
    /// struct that is not `Hashable`) is never found here. O(senders kept): subscribing only.
    @usableFromInline
    func newest<S: Sendable>(fromAny senderType: S.Type, after serial: Int) -> (envelope: Envelope<M, S>, serial: Int)?
    {
        var newest: (envelope: Envelope<M, S>, serial: Int)?
        for entry in _byValue.entries where entry._value._serial > newest?.serial ?? serial {
            if let sender = entry._sender._value as? S {
                newest = (Envelope(mail: entry._value._mail, sender: sender), entry._value._serial)
            }
        }
        for kept in _byObject.values where kept._serial > newest?.serial ?? serial {
            if let sender = kept._sender as? S {
                newest = (Envelope(mail: kept._mail, sender: sender), kept._serial)
            }
        }
        return newest
    }

    /// Whether nothing is kept.
    @usableFromInline var isEmpty: Bool { _byValue.isEmpty && _byObject.isEmpty }

    /// Takes every kept mail out, to release once no lock is held.
    @usableFromInline
    func takeAll() -> [M] {
        defer {
            _byValue = ValueTable()
            _byObject = [:]
        }
        return _byValue.values.map(\._mail) + _byObject.values.map(\._mail)
    }

    /// Drops the per-sender mail of object senders that are gone (nobody can name them any more);
    /// the type's newest mail stays. Returns what it dropped, to be released after unlocking.
    @usableFromInline
    func sweep() -> [M] {
        var swept: [M] = []
        _byObject = _byObject.filter { entry in
            if entry.value._sender != nil { return true }
            swept.append(entry.value._mail)
            return false
        }
        return swept
    }
}
