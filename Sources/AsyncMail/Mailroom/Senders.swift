/// Which senders' mail a subscription hears: everyone's, or only one sender's.
///
/// Pass it as `from:` to ``Mailroom/subscribe(to:from:bufferingPolicy:startingWithLatest:where:)``,
/// ``Mailroom/observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)``,
/// ``Mailroom/latest(_:from:)`` and ``Mailroom/subscriberCount(_:from:)``:
///
/// ```swift
/// let everything = await mailroom.subscribe(to: ChatLine.self)                          // .everyone
/// let lobby = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby"))) // a value
/// let mine = await mailroom.subscribe(to: Joined.self, from: .only(session))            // an object
/// ```
///
/// A sender is classified by its value at run time, exactly as a post classifies it, never by the
/// static type written at the call site:
/// - An object or actor matches by identity, even when it is also `Hashable`: another instance
///   that compares equal is a different sender. It is held weakly by the subscription.
/// - Any other `Hashable` value matches by type and equality: `"lobby"` as a `String` never
///   matches `RoomID("lobby")`, and `1 as Int` never matches `1 as Int64`.
/// - `Optional`s and existential boxes are looked through: `.only(Optional(room))` is
///   `.only(room)`. `.only(nil)` hears nothing, since mail posted from `nil` has no sender.
///
/// A sender *type* is not a sender: to hear every sender of a type, together with the sender, use
/// ``Mailroom/subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``. `.only(Player.self)`
/// does not compile, since a metatype is neither an object nor `Hashable`.
///
/// A `Senders` made with `only(_:)` holds its object strongly for as long
/// as the value lives; the subscriptions made with it hold the object weakly.
public struct Senders: Sendable, CustomStringConvertible {
    @usableFromInline
    enum _Kind: Sendable {
        case everyone
        case object(any AnyObject & Sendable)
        case value(ValueSender)
    }

    @usableFromInline let _kind: _Kind

    @inlinable
    init(_ kind: _Kind) {
        self._kind = kind
    }

    /// Every sender, and mail posted with none: the default.
    @inlinable
    public static var everyone: Senders { Senders(.everyone) }

    /// One object or actor, matched by identity; `nil` is no sender, and hears nothing.
    ///
    /// ```swift
    /// let fromLobby = await mailroom.subscribe(to: Joined.self, from: .only(lobby))
    /// ```
    @inlinable
    public static func only(_ sender: (some AnyObject & Sendable)?) -> Senders {
        guard let sender else { return Senders(.value(ValueSender(ObjectIdentifier?.none))) }
        return Senders(.object(sender))
    }

    /// One `Hashable` value, such as a room id, matched by its type and equality.
    ///
    /// When the value is an object that reaches here through a generic `Hashable` parameter, it
    /// still matches by identity; an `Optional` is looked through.
    ///
    /// ```swift
    /// let lobby = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")))
    /// ```
    @inlinable @_disfavoredOverload
    public static func only<S: Hashable & Sendable>(_ sender: S) -> Senders {
        pinned(to: sender)
    }

    /// `.only` of a concrete value, named apart so that the existential forms can open their box
    /// into it without resolving back to themselves.
    @inlinable
    static func pinned<S: Hashable & Sendable>(to sender: S) -> Senders {
        switch SenderKey(classifying: sender) {
        case .object(let object):
            return Senders(.object(object.sendableObject))
        case .value(let value) where value._type != ObjectIdentifier(S.self):
            return Senders(.value(value))  // the value an Optional or an existential held
        case .value, .none:
            // `.none` is `nil`: filed under its own value, which no post classifies as a sender.
            return Senders(.value(ValueSender(sender)))
        }
    }

    /// "everyone", or "only" and the sender, for messages and logs.
    public var description: String {
        switch _kind {
        case .everyone: "everyone"
        case .object(let object): "only \(type(of: object)) object \(ObjectIdentifier(object))"
        case .value(let value): "only \(value._value)"
        }
    }

    /// Whether this is ``everyone``: for the testing helpers, which watch other senders only
    /// when a sender is named.
    package var isEveryone: Bool { key == nil }

    /// Whether a post from `sender` (as a tap sees it, ``PostedMail/sender``) is one these senders
    /// hear, by the rule a post follows. For AsyncMailTesting's `expectNoMail`, which watches with
    /// a tap so that it is not demand.
    package func hears(_ sender: (any Sendable)?) -> Bool {
        guard let key else { return true }
        guard let sender else { return false }
        return SenderKey(classifying: sender).isSameSender(as: key)
    }

    /// What a `whileSubscribed` work for these senders is known by; holds no sender.
    var _workKey: Demand.WorkKey {
        switch _kind {
        case .everyone: .all
        case .object(let object): .object(ObjectIdentifier(object))
        case .value(let value): .value(value)
        }
    }

    /// Where a post's sender is looked up for this value; nil for ``everyone``.
    @inlinable
    var key: SenderKey? {
        switch _kind {
        case .everyone: nil
        case .object(let object): .object(ObjectSender(object))
        case .value(let value): .value(value)
        }
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not one sender: subscribe(to:fromAny:) hears every sender of a type"
    )
    public static func only<S>(_ senderType: S.Type) -> Senders {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender is an object, matched by identity, or a Hashable value, matched by equality: make it Hashable"
    )
    public static func only<S: Sendable>(_ sender: S) -> Senders {
        fatalError("unavailable")
    }
}
