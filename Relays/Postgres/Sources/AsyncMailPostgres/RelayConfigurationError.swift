/// A relay set up with something it cannot use; thrown before anything touches the database.
public enum RelayConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The channel name cannot be used with `LISTEN`/`NOTIFY` as given.
    case invalidChannelName(String, reason: String)
    /// A wire name for a mail or sender type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    case invalidWireName(String)
    /// The wire name is already registered for another type.
    case wireNameTaken(String, by: String)
    /// The type is already registered under another wire name.
    case typeAlreadyRegistered(String, as: String)
    /// A table name for the durable mode: a lower-case SQL identifier of 1–63 characters.
    case invalidTableName(String)
    /// An authentication key shorter than 32 bytes, the length of its HMAC-SHA256 output.
    case keyTooShort(bytes: Int)
    /// An environment variable that ``PostgresRelay/connectionFromEnvironment(_:)`` read holds
    /// something it cannot use, such as a `PGPORT` that is not a port number.
    case invalidEnvironmentVariable(String, value: String)

    public var description: String {
        switch self {
        case .invalidChannelName(let name, let reason): "invalid relay channel name \"\(name)\": \(reason)"
        case .invalidWireName(let name): "invalid wire name \"\(name)\": use 1-100 of A-Z a-z 0-9 . _ -"
        case .wireNameTaken(let name, let type): "wire name \"\(name)\" is already registered for \(type)"
        case .typeAlreadyRegistered(let type, let name): "\(type) is already registered as \"\(name)\""
        case .invalidTableName(let name): "invalid table name \"\(name)\": use a lower-case SQL identifier"
        case .keyTooShort(let bytes): "an authentication key of \(bytes) bytes: use at least 32 random bytes"
        case .invalidEnvironmentVariable(let name, let value): "\(name)=\"\(value)\" cannot be used"
        }
    }
}
