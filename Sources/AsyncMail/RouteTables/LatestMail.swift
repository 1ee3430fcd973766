/// The latest mail of one type, kept after ``Mailroom/retainLatest(_:)`` opts the type in.
///
/// A class, not a struct: a post checks whether its type keeps mail on every call, and in
/// unspecialised generic code a nil check on a struct of this size copies it through value
/// witnesses, which made every post measurably slower; a reference makes it a pointer check.
///
/// Only ever touched while the owning ``Switchboard``'s lock is held, which is why its mutable
/// properties skip dynamic exclusivity checks (see ``RouteTable``).
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

    /// Kept mail that one change replaced or dropped, handed back so that it is released once
    /// no lock is held: a mail's deinit is user code.
    @usableFromInline
    struct Displaced: Sendable {
        @usableFromInline var _newest: M?
        @usableFromInline var _fromSender: M?
        @usableFromInline var _swept: [M] = []

        @inlinable init() {}
    }

    /// The newest mail of the type, whatever its sender, kept even once an object sender that
    /// posted it is gone: a late subscriber wants the current value, whoever set it (as with
    /// Combine's `CurrentValueSubject`), and one mail per type is bounded.
    @usableFromInline @exclusivity(unchecked) var _newest: M?
    /// The newest mail per value sender; one per distinct value, kept until close().
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<FromValue>()
    /// The newest mail per object sender, dropped once the sender is gone.
    @usableFromInline @exclusivity(unchecked) var _byObject: [ObjectIdentifier: FromObject] = [:]
    /// `byObject.count` after the last sweep: sweeping again when it doubles keeps the
    /// mail of departed senders bounded at O(1) amortised cost per post.
    @usableFromInline @exclusivity(unchecked) var _countAtLastSweep = 0
    /// Counts the mail kept per sender, so that the newest of several senders' can be found.
    @usableFromInline @exclusivity(unchecked) var _serial = 0

    @usableFromInline init() {}

    /// Keeps `mail` as the newest, and as the newest from its sender; returns what it replaced.
    @inlinable
    func record(_ mail: M, key: SenderKey) -> Displaced {
        var displaced = Displaced()
        displaced._newest = _newest
        _newest = mail
        switch key {
        case .none:
            break
        case .value(let value):
            _serial &+= 1
            displaced._fromSender = _byValue[value]?._mail
            _byValue[value] = FromValue(mail: mail, serial: _serial)
        case .object(let sender):
            _serial &+= 1
            // A live sender at the kept sender's address is the kept sender (see RouteTable.recipients).
            if let kept = _byObject[sender._id], kept._sender != nil {
                displaced._fromSender = kept._mail
                kept._mail = mail
                kept._serial = _serial
            } else {
                let kept = FromObject(sender: sender.object, mail: mail, serial: _serial)
                // A departed sender's entry at the same address: released after unlocking.
                if let departed = _byObject.updateValue(kept, forKey: sender._id) {
                    displaced._swept.append(departed._mail)
                }
                if _byObject.count > max(8, 2 * _countAtLastSweep) { displaced._swept += sweep() }
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
    /// conforming to a protocol `S` counts), with that sender; nil when there is none.
    ///
    /// Only object and value senders have mail kept per sender, so mail from other senders (a
    /// struct that is not `Hashable`) is never found here. O(senders kept): subscribing only.
    @usableFromInline
    func newest<S: Sendable>(fromAny senderType: S.Type) -> Envelope<M, S>? {
        var newest: (envelope: Envelope<M, S>, serial: Int)?
        for entry in _byValue.entries where entry._value._serial > newest?.serial ?? .min {
            if let sender = entry._sender._value as? S {
                newest = (Envelope(mail: entry._value._mail, sender: sender), entry._value._serial)
            }
        }
        for kept in _byObject.values where kept._serial > newest?.serial ?? .min {
            if let sender = kept._sender as? S {
                newest = (Envelope(mail: kept._mail, sender: sender), kept._serial)
            }
        }
        return newest?.envelope
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
        _countAtLastSweep = _byObject.count
        return swept
    }
}
