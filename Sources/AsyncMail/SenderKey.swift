/// How a posted sender is matched against pinned subscriptions.
@usableFromInline
enum SenderKey {
    /// No sender, or one that is neither an object nor `Hashable`: only the sender-type filter applies.
    case none
    /// An object or actor, matched by identity.
    case object(AnyObject)
    /// A `Hashable` value, matched by type and equality.
    case value(ValueSender)

    /// Classifies a sender at run time, so a generic caller gets the same routing as a concrete one.
    @inlinable
    init<S: Sendable>(_ sender: S) {
        // Objects match by identity even when they are also Hashable.
        if type(of: sender) is AnyObject.Type {
            self = .object(sender as AnyObject)
        } else if let value = ValueSender(ifHashable: sender) {
            self = .value(value)
        } else {
            self = .none
        }
    }
}

/// A `Hashable` sender value, type-erased but still `Sendable` (`AnyHashable` is not).
///
/// The exact dynamic type is part of equality, so `"a"` as a `String` never equals
/// `RoomID("a")`, and `1 as Int` never equals `1 as Int64` (which `AnyHashable` would conflate).
@usableFromInline
struct ValueSender: Hashable, Sendable {
    /// The sender itself; known to be `Hashable`, checked again when compared.
    @usableFromInline let value: any Sendable
    /// The sender's dynamic type.
    @usableFromInline let type: ObjectIdentifier
    /// The sender's hash, computed once so dictionary lookups need no dynamic cast.
    @usableFromInline let hash: Int

    @inlinable
    init<H: Hashable & Sendable>(_ value: H) {
        self.value = value
        self.type = ObjectIdentifier(Swift.type(of: value))
        self.hash = value.hashValue
    }

    /// Wraps `sender` if its dynamic type is `Hashable`.
    @inlinable
    init?<S: Sendable>(ifHashable sender: S) {
        guard let hashable = sender as? any Hashable else { return nil }
        self.value = sender
        self.type = ObjectIdentifier(Swift.type(of: hashable))
        self.hash = hashable.hashValue
    }

    @inlinable
    func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(hash)
    }

    @inlinable
    static func == (lhs: ValueSender, rhs: ValueSender) -> Bool {
        guard lhs.type == rhs.type, lhs.hash == rhs.hash,
            let hashable = lhs.value as? any Hashable
        else { return false }
        return isEqual(hashable, to: rhs.value)
    }

    /// `lhs == rhs` when `rhs` has `lhs`'s type; called with an opened existential.
    @inlinable
    static func isEqual<H: Hashable>(_ lhs: H, to rhs: Any) -> Bool {
        (rhs as? H) == lhs
    }
}
