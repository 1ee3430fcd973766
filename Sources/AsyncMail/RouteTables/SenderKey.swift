/// How a posted sender is matched against pinned subscriptions.
///
/// One rule for every place a sender is classified (posting, subscribing, `latest(_:from:)`),
/// decided by the sender's value at run time, never by the static type at the call site:
/// - An `Optional` is looked through, however deeply nested: `Optional(bob)` is `bob`, and `nil`
///   is no sender at all (see ``Unwrapped``).
/// - An existential box (`any Sendable`, `any Hashable & Sendable`) is looked through.
/// - What is left is an object (a class instance or an actor), matched by identity even when it
///   is also `Hashable`; otherwise a `Hashable` value, matched by type and equality; otherwise
///   neither, which only the sender-type filter can match.
@usableFromInline
enum SenderKey {
    /// No sender, or one that is neither an object nor `Hashable`: only the sender-type filter applies.
    case none
    /// An object or actor, matched by identity.
    case object(ObjectSender)
    /// A `Hashable` value, matched by type and equality.
    case value(ValueSender)

    /// Classifies a sender that ``unwrap(_:)`` returned as it is, or the contents it opened.
    ///
    /// Always inlined: called out of line, the object case retained and released the sender, and
    /// a pinned sender's reference counts take the runtime's slow side-table path.
    @inlinable @inline(__always)
    init<S: Sendable>(_ sender: S) {
        // Objects match by identity even when they are also Hashable.
        if S.self is AnyObject.Type {
            // `S` is itself a class, so a value of it is one strong reference: exactly what an
            // `AnyObject` holds. Reinterpreting it skips the runtime's bridging cast that
            // `as AnyObject` makes in generic code, a measurable share of an object-pinned post.
            self = .object(ObjectSender(unsafeBitCast(sender, to: AnyObject.self)))
        } else if type(of: sender as Any) is AnyObject.Type {
            // An existential holding an object. (`type(of: sender)` would be the existential's
            // own type here, not the object's: a generic context does not look inside.)
            self = .object(ObjectSender(sender as AnyObject))
        } else if let value = ValueSender(ifHashable: sender) {
            self = .value(value)
        } else {
            self = .none
        }
    }

    /// Whether the two keys name one sender: the same object, or equal values of one type.
    @usableFromInline
    func isSameSender(as other: SenderKey) -> Bool {
        switch (self, other) {
        case (.object(let left), .object(let right)): left._id == right._id
        case (.value(let left), .value(let right)): left == right
        case (.none, _), (.object, _), (.value, _): false
        }
    }

    /// Where a table looks for this sender's room: trivially copied, so that a post works it out
    /// before taking the table's lock and copies no existential under it.
    @usableFromInline
    enum RoomLookup {
        case none
        case object(ObjectIdentifier)
        case value(SenderDigest)
    }

    /// Where a table looks for this sender's room.
    @inlinable
    var roomLookup: RoomLookup {
        switch self {
        case .none: .none
        case .object(let sender): .object(sender._id)
        case .value(let value): .value(SenderDigest(value))
        }
    }

    /// Where a post looks for the room of a sender that ``unwrap(_:)`` returned as it is, or of the
    /// contents it opened: `SenderKey(sender).roomLookup`, without building the key for a class.
    /// A post builds the key itself only where it keeps or records mail.
    @inlinable @inline(__always)
    static func lookup<S: Sendable>(_ sender: S) -> RoomLookup {
        // Reinterpreting a class's value as an `AnyObject`, as ``init(_:)`` does.
        if S.self is AnyObject.Type { return .object(ObjectIdentifier(unsafeBitCast(sender, to: AnyObject.self))) }
        return SenderKey(sender).roomLookup
    }

    /// Classifies any sender, `Optional`s included: what `subscribe(to:from:)` and
    /// `latest(_:from:)` use, so that they file a sender exactly where a post looks for it.
    @inlinable
    init<S: Sendable>(classifying sender: S) {
        switch SenderKey.unwrap(sender) {
        case .asIs: self.init(sender)
        case .contents(let contents): self.init(contents)
        case .absent: self = .none
        }
    }

    /// A sender with any `Optional` or existential box around it removed.
    @usableFromInline
    enum Unwrapped {
        /// Nothing wraps the sender: use it as it is (the common case, decided without a cast).
        case asIs
        /// What an `Optional` or an existential box held, in an `any Sendable` whose own type
        /// is the sender's.
        case contents(any Sendable)
        /// The sender was `nil`: there is no sender.
        case absent
    }

    /// Looks through the `Optional`s and existential boxes around a sender.
    ///
    /// A class, or a concrete type that is not `Optional`, is returned `.asIs` without a dynamic
    /// cast; only an `Optional`, or an existential box, is opened up.
    @inlinable @inline(__always)
    static func unwrap<S: Sendable>(_ sender: S) -> Unwrapped {
        if S.self is AnyObject.Type { return .asIs }
        // `_isOptional` is resolved at compile time in specialised code; asking whether `S`
        // conforms to `OptionalSender` instead was a protocol-conformance lookup on every post.
        if _isOptional(S.self) || type(of: sender as Any) != S.self {
            return unwrap(boxed: sender)
        }
        return .asIs
    }

    /// The slow half of ``unwrap(_:)``: an `Optional` or an existential, opened at run time.
    @usableFromInline
    static func unwrap(boxed sender: Any) -> Unwrapped {
        var contents = sender
        while let optional = contents as? any OptionalSender {
            guard let wrapped = optional.wrappedSender else { return .absent }
            contents = wrapped
        }
        return .contents(assumeSendable(contents))
    }
}

/// An `Optional`, seen without knowing its `Wrapped` type.
private protocol OptionalSender {
    /// The wrapped value, or nil for `.none`.
    var wrappedSender: Any? { get }
}

extension Optional: OptionalSender {
    fileprivate var wrappedSender: Any? { map { $0 as Any } }
}

/// `value` as `any Sendable`.
///
/// Only called with what an `Optional` or existential sender held, and a sender is `Sendable`, so
/// its payload is too. `Sendable` is a marker protocol: the cast checks nothing at run time and cannot fail.
/// (A generic cast, because `Any as? any Sendable` written out is diagnosed as always succeeding.)
private func assumeSendable(_ value: Any) -> any Sendable {
    func cast<T>(_ value: Any, to type: T.Type) -> T? { value as? T }
    return cast(value, to: (any Sendable).self) ?? ""
}

/// An object sender as a post sees it: its identity, and the object itself, unretained.
///
/// Why unretained is safe: every key is built from a sender that its caller passed in and holds
/// for the whole call (`post`, `latest(_:from:)`, a replaying `subscribe`), and no key is stored
/// beyond that call; what outlives it (``ObjectRoute``, ``KeptRoom``) holds the object weakly.
/// AddressSanitizer runs every test with object senders in CI, including senders passed as
/// existentials, whose key reads an object the existential holds.
///
/// Why bother: a pinned sender has a weak reference, so the runtime keeps its reference counts in
/// a side table, and every retain and release of it takes the slow path. Holding the key strongly
/// cost a retain and a release per post.
@usableFromInline
struct ObjectSender {
    /// The sender's identity, what routes are keyed by.
    @usableFromInline let _id: ObjectIdentifier
    @usableFromInline let _unretained: Unmanaged<AnyObject>

    @inlinable
    init(_ object: AnyObject) {
        self._id = ObjectIdentifier(object)
        self._unretained = .passUnretained(object)
    }

    /// The sender, retained from here on by whoever keeps it.
    @inlinable var object: AnyObject { _unretained.takeUnretainedValue() }

    /// The sender as a `Sendable` object: it was classified from a `Sendable` sender, so it is one.
    @usableFromInline var sendableObject: any AnyObject & Sendable {
        func cast<T>(_ value: AnyObject, to type: T.Type) -> T? { value as? T }
        // `Sendable` is a marker protocol: the cast checks nothing at run time and cannot fail.
        return cast(object, to: (any AnyObject & Sendable).self)!
    }
}

/// A `Hashable` sender value, type-erased but still `Sendable` (`AnyHashable` is not).
///
/// The exact dynamic type is part of equality, so `"a"` as a `String` never equals
/// `RoomID("a")`, and `1 as Int` never equals `1 as Int64` (which `AnyHashable` would conflate).
@usableFromInline
struct ValueSender: Equatable, Sendable {
    /// The sender itself; known to be `Hashable`, checked again when compared.
    @usableFromInline let _value: any Sendable
    /// The sender's dynamic type.
    @usableFromInline let _type: ObjectIdentifier
    /// The sender's hash, computed once so lookups need no dynamic cast (see ``ValueTable``).
    @usableFromInline let _hash: Int
    /// The sender with its own type's `==`. Set where the type is statically `Hashable` (a
    /// subscription's key), so that a post compares against it with no conformance lookup and,
    /// where the post's sender has that type statically, no cast of the value either (see
    /// ``matches(_:)``); nil for keys classified at run time, such as a post's.
    @usableFromInline let _typed: (any TypedSenderValue)?

    @inlinable
    init<H: Hashable & Sendable>(_ value: H) {
        self._value = value
        self._type = ObjectIdentifier(Swift.type(of: value))
        self._hash = value.hashValue
        self._typed = TypedSender(value)
    }

    /// Wraps `sender` if its dynamic type is `Hashable`.
    @inlinable
    init?<S: Sendable>(ifHashable sender: S) {
        guard let hashable = sender as? any Hashable else { return nil }
        self._value = sender
        self._type = ObjectIdentifier(Swift.type(of: hashable))
        self._hash = hashable.hashValue
        self._typed = nil
    }

    @inlinable
    static func == (lhs: ValueSender, rhs: ValueSender) -> Bool {
        guard lhs._type == rhs._type, lhs._hash == rhs._hash else { return false }
        // By the side that kept its type's `==`, if either did.
        if lhs._typed == nil, rhs._typed != nil { return rhs.isEqual(toValue: lhs._value) }
        return lhs.isEqual(toValue: rhs._value)
    }

    /// Whether `value` is a value of this sender's type equal to it: by the type's `==` kept with
    /// it, or else by casting both.
    @inlinable
    func isEqual(toValue value: any Sendable) -> Bool {
        if let typed = _typed { return typed.isEqual(to: value) }
        guard let hashable = _value as? any Hashable else { return false }
        return Self.isEqual(hashable, to: value)
    }

    /// Whether `sender`, whose digest is `digest`, is this sender.
    ///
    /// A post's sender has its own concrete type statically (see ``SenderKey/unwrap(_:)``): when
    /// this key keeps a value of that type, the two compare by the type's `==` with no dynamic
    /// cast of either value (the casts were most of a value-pinned post's own cost; figures in
    /// `Benchmarks/README.md`). Otherwise (a sender opened from an existential, or a key classified
    /// at run time) they compare as ``==(_:_:)`` does.
    @inlinable
    func matches<S: Sendable>(_ sender: S, digest: SenderDigest) -> Bool {
        guard _type == digest._type, _hash == digest._hash else { return false }
        if let typed = _typed as? TypedSender<S> { return typed._equals(typed._value, sender) }
        return isEqual(toValue: sender)
    }

    /// `lhs == rhs` when `rhs` has `lhs`'s type; called with an opened existential.
    @inlinable
    static func isEqual<H: Hashable>(_ lhs: H, to rhs: Any) -> Bool {
        (rhs as? H) == lhs
    }
}

/// A sender value kept with its type's `==`, seen without its type.
@usableFromInline
protocol TypedSenderValue: AnyObject, Sendable {
    /// Whether `other` is a value of this sender's type equal to it.
    func isEqual(to other: any Sendable) -> Bool
}

/// A sender value of a statically known `Hashable` type, kept with that type's `==`.
///
/// The value's type is the class's parameter, so a post whose sender has that type statically
/// finds it with a class cast (one metadata comparison) instead of casting an existential.
@usableFromInline
final class TypedSender<Value: Sendable>: TypedSenderValue {
    @usableFromInline let _value: Value
    /// The type's `==`, captured where `Value` is known to be `Equatable`.
    @usableFromInline let _equals: @Sendable (Value, Value) -> Bool

    @inlinable
    init(_ value: Value) where Value: Equatable {
        self._value = value
        self._equals = { $0 == $1 }
    }

    @inlinable
    func isEqual(to other: any Sendable) -> Bool {
        guard let other = other as? Value else { return false }
        return _equals(_value, other)
    }
}
