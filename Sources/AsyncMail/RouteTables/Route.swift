/// Where one subscription lives.
///
/// The same value files a subscription and, from its stream's termination handler, takes it
/// out again, so the two can never disagree. Every place that must handle every route switches
/// over it, and the compiler checks that none is missed.
@usableFromInline
enum Route: Sendable {
    /// A tap on every post, whatever its type.
    case tap
    /// A place in the route table of one mail type, named by the type's identity.
    case table(ObjectIdentifier, TableRoute)
}

/// Where in one mail type's ``RouteTable`` a subscription lives.
@usableFromInline
enum TableRoute: Sendable {
    /// Every mail of the type, from any sender or none.
    case everyone
    /// Mail from one object or actor, by its identity.
    case object(ObjectIdentifier)
    /// Mail from one `Hashable` sender value.
    case value(ValueSender)
    /// Mail from any sender of one type, handed over in envelopes; the type's identity.
    case senderType(ObjectIdentifier)
}

/// The mail type a tap registers with: a tap has none, and its route, ``Route/tap``, names no table.
@usableFromInline
enum NoMail: Mail {}
