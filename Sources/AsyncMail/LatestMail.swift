/// The latest mail of one type, kept after ``Mailroom/retainLatest(_:)`` opts the type in.
///
/// A class, not a struct: a post checks whether its type keeps mail on every call, and in
/// unspecialised generic code a nil check on a struct of this size copies it through value
/// witnesses (measured: posts 60% slower); a reference makes it a pointer check.
///
/// Only ever touched while the owning ``Switchboard``'s lock is held, which is why its mutable
/// properties skip dynamic exclusivity checks (see ``Routes``).
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

    /// The newest mail of the type, whatever its sender.
    @usableFromInline @exclusivity(unchecked) var newest: M?
    /// The newest mail per value sender; one per distinct value, kept until close().
    @usableFromInline @exclusivity(unchecked) var byValue = ValueTable<M>()
    /// The newest mail per object sender, dropped once the sender is gone.
    @usableFromInline @exclusivity(unchecked) var byObject: [ObjectIdentifier: FromObject] = [:]
    /// `byObject.count` after the last sweep: sweeping again when it doubles keeps the
    /// mail of departed senders bounded at O(1) amortised cost per post.
    @usableFromInline @exclusivity(unchecked) var countAtLastSweep = 0

    @usableFromInline init() {}

    @inlinable
    func record(_ mail: M, key: SenderKey) {
        newest = mail
        switch key {
        case .none:
            break
        case .value(let value):
            byValue[value] = mail
        case .object(let sender):
            // A live sender at the kept sender's address is the kept sender (see Routes.recipients).
            if let kept = byObject[sender.id], kept.sender != nil {
                kept.mail = mail
            } else {
                byObject[sender.id] = FromObject(sender: sender.object, mail: mail)
                if byObject.count > max(8, 2 * countAtLastSweep) { sweep() }
            }
        }
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

    /// Drops the mail of object senders that are gone.
    @usableFromInline
    func sweep() {
        byObject = byObject.filter { $0.value.sender != nil }
        countAtLastSweep = byObject.count
    }

    /// How many object senders have mail kept; lets tests prove departed senders' mail is freed.
    var objectSenderCount: Int { byObject.count }
}
