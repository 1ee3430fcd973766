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
        @usableFromInline weak var sender: AnyObject?
        @usableFromInline var mail: M

        @usableFromInline
        init(sender: AnyObject, mail: M) {
            self.sender = sender
            self.mail = mail
        }
    }

    /// Kept mail that one change replaced or dropped, handed back so that it is released once
    /// no lock is held: a mail's deinit is user code.
    @usableFromInline
    struct Displaced: Sendable {
        @usableFromInline var newest: M?
        @usableFromInline var fromSender: M?
        @usableFromInline var swept: [M] = []

        @inlinable init() {}
    }

    /// The newest mail of the type, whatever its sender.
    @usableFromInline @exclusivity(unchecked) var newest: M?
    /// The kept entry of the object that posted `newest`, if an object did: once that sender is
    /// gone, `newest` is its mail and goes too.
    @usableFromInline @exclusivity(unchecked) var newestFromObject: FromObject?
    /// The newest mail per value sender; one per distinct value, kept until close().
    @usableFromInline @exclusivity(unchecked) var byValue = ValueTable<M>()
    /// The newest mail per object sender, dropped once the sender is gone.
    @usableFromInline @exclusivity(unchecked) var byObject: [ObjectIdentifier: FromObject] = [:]
    /// `byObject.count` after the last sweep: sweeping again when it doubles keeps the
    /// mail of departed senders bounded at O(1) amortised cost per post.
    @usableFromInline @exclusivity(unchecked) var countAtLastSweep = 0

    @usableFromInline init() {}

    /// Keeps `mail` as the newest, and as the newest from its sender; returns what it replaced.
    @inlinable
    func record(_ mail: M, key: SenderKey) -> Displaced {
        var displaced = Displaced()
        displaced.newest = newest
        newest = mail
        newestFromObject = nil
        switch key {
        case .none:
            break
        case .value(let value):
            displaced.fromSender = byValue[value]
            byValue[value] = mail
        case .object(let sender):
            // A live sender at the kept sender's address is the kept sender (see RouteTable.recipients).
            if let kept = byObject[sender.id], kept.sender != nil {
                displaced.fromSender = kept.mail
                kept.mail = mail
                newestFromObject = kept
            } else {
                let kept = FromObject(sender: sender.object, mail: mail)
                // A departed sender's entry at the same address: released after unlocking.
                if let departed = byObject.updateValue(kept, forKey: sender.id) {
                    displaced.swept.append(departed.mail)
                }
                newestFromObject = kept
                if byObject.count > max(8, 2 * countAtLastSweep) { displaced.swept += sweep() }
            }
        }
        return displaced
    }

    /// The newest mail whatever its sender, unless that sender was an object that is gone.
    @usableFromInline
    var newestFromLiveSender: M? {
        if let newestFromObject, newestFromObject.sender == nil { return nil }
        return newest
    }

    /// The newest mail from this sender, if any.
    @usableFromInline
    func newest(from key: SenderKey) -> M? {
        switch key {
        case .none: nil
        case .value(let value): byValue[value]
        case .object(let sender):
            byObject[sender.id].flatMap { $0.sender != nil ? $0.mail : nil }
        }
    }

    /// Drops the mail of object senders that are gone, the type's newest mail among it when a
    /// departed sender posted that; returns what it dropped, to be released after unlocking.
    @usableFromInline
    func sweep() -> [M] {
        var swept: [M] = []
        byObject = byObject.filter { entry in
            if entry.value.sender != nil { return true }
            swept.append(entry.value.mail)
            return false
        }
        if let newestFromObject, newestFromObject.sender == nil, let mail = newest {
            swept.append(mail)
            newest = nil
            self.newestFromObject = nil
        }
        countAtLastSweep = byObject.count
        return swept
    }
}
