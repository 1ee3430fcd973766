/// A sender that is an optional existential, `(any Hashable & Sendable)?`: only `Optional` of that
/// box conforms. It lets `post(_:from:)` and `Senders.only(_:)` take such a value as it is.
///
/// An `Optional` of a concrete sender, such as `RoomID?`, is itself `Hashable` and takes the
/// generic form; the box inside an optional existential is not, and without this it matched no
/// `post` at all. You never name this protocol: write `await mailroom.post(mail, from: sender)`
/// with `sender: (any Hashable & Sendable)?`, and `nil` posts with no sender.
// A generic constrained to this protocol is no candidate for `RoomID?` (whose `Wrapped` is not
// the box), so it adds no ambiguity to the concrete forms, as an overload taking the optional box
// as a parameter type would (`RoomID?` converts to it).
public protocol _OptionalExistentialSender: Sendable {
    /// The sender in the box, or nil for no sender.
    var _sender: (any Hashable & Sendable)? { get }
}

extension Optional: _OptionalExistentialSender where Wrapped == any Hashable & Sendable {
    /// The optional itself: the sender in the box, or nil for no sender.
    public var _sender: (any Hashable & Sendable)? { self }
}
