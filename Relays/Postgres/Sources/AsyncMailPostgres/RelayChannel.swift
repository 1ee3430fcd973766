/// A relay channel's name: the PostgreSQL `LISTEN` channel, and the key of its rows in durable mode.
///
/// Validated when made, because PostgreSQL fails late and quietly on bad names: it truncates a
/// name longer than 63 bytes on `LISTEN` but rejects it on `NOTIFY`, and an unquoted mixed-case
/// name is folded to lower case, so it never matches a `pg_notify` of the original. A name is
/// 1–63 characters of lower-case ASCII letters, digits and `_`, starting with a letter or `_`:
/// the same rule as the durable mode's table name.
///
/// ```swift
/// let channel = try RelayChannel("chat_events")
/// ```
public struct RelayChannel: Sendable, Hashable, CustomStringConvertible {
    /// The name, exactly as PostgreSQL sees it.
    public let name: String

    /// Validates `name`; throws `RelayConfigurationError.invalidChannelName(_:reason:)` when it is unusable.
    public init(_ name: String) throws(RelayConfigurationError) {
        if let reason = SQLIdentifier.problem(with: name) { throw .invalidChannelName(name, reason: reason) }
        self.name = name
    }

    public var description: String { name }
}
