/// A value that can be posted through a ``Mailroom``.
///
/// `Mail` refines `Sendable`, so the compiler rejects a mail type whose stored
/// properties are not safe to share between tasks. Mail is routed by its type's
/// identity, not its name: two nested types that are both called `Note` never see
/// each other's mail.
///
/// ```swift
/// struct OrderPlaced: Mail {
///     let orderID: Int
/// }
/// ```
public protocol Mail: Sendable {}
