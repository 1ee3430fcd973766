/// A room that a post found under its shard's lock and checks after releasing it.
///
/// Both checks read only what never changes once a room exists, or changes one way: a value
/// room's sender is immutable, and an object room's weak sender only ever goes from the object to
/// nil. So checking once the lock is released gives the answer checking under it would have, and
/// the lock, which posts to every other room also take, is held for less.
@usableFromInline
enum RoomCheck<M: Mail> {
    /// Nothing to check: no room was found, or it was checked under the lock.
    case none
    /// A value room found by its digest alone: it is the post's if its sender equals the post's.
    case value(ValueTable<SubscriberList<M>>.Entry)
    /// An object room found by its sender's address: it is the post's if its sender is alive
    /// (then, at that address, it is the posting object, which is alive too); otherwise it is a
    /// departed sender's.
    case object(ObjectRoute<M>)

    /// Whether the room found is the one posts from `sender` go to; `lookup` is where `sender`
    /// was looked for.
    @inlinable @inline(__always)
    func holds<S: Sendable>(for sender: S?, lookup: SenderKey.RoomLookup) -> Bool {
        switch self {
        case .none:
            return true
        case .value(let entry):
            guard case .value(let digest) = lookup, let sender else { return false }
            return entry._sender.matches(sender, digest: digest)
        case .object(let route):
            return route._sender != nil
        }
    }
}
