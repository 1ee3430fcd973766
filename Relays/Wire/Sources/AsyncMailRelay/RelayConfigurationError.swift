@_spi(AsyncMailRelay) import RelayWire

/// A relay set up with something it cannot use; thrown before anything touches the database.
///
/// Switch over ``code``; codes may be added in any release, so such a `switch` keeps a
/// `default`. Each error compares equal to the one made by the factory of the same name.
public struct RelayConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What cannot be used. A struct rather than an enum, so that a code added later breaks no
    /// one's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable {
            case invalidChannelName, invalidWireName, wireNameTaken, typeAlreadyRegistered, invalidTableName
            case keyTooShort, invalidEnvironmentVariable, positionsUnavailable, presenceUnavailable
            case invalidDatabasePath
        }

        let base: Base

        /// The channel name ``RelayConfigurationError/name`` cannot be used with `LISTEN`/`NOTIFY`.
        public static let invalidChannelName = Code(base: .invalidChannelName)
        /// The wire name ``RelayConfigurationError/name`` is not 1–100 of `A-Z a-z 0-9 . _ -`.
        public static let invalidWireName = Code(base: .invalidWireName)
        /// The wire name ``RelayConfigurationError/name`` is registered for the type
        /// ``RelayConfigurationError/registered``.
        public static let wireNameTaken = Code(base: .wireNameTaken)
        /// The type ``RelayConfigurationError/name`` is registered as the wire name
        /// ``RelayConfigurationError/registered``.
        public static let typeAlreadyRegistered = Code(base: .typeAlreadyRegistered)
        /// The table name ``RelayConfigurationError/name`` is not a lower-case SQL identifier.
        public static let invalidTableName = Code(base: .invalidTableName)
        /// The authentication key is ``RelayConfigurationError/bytes`` long, under 32.
        public static let keyTooShort = Code(base: .keyTooShort)
        /// The environment variable ``RelayConfigurationError/name`` holds
        /// ``RelayConfigurationError/value``, which cannot be used.
        public static let invalidEnvironmentVariable = Code(base: .invalidEnvironmentVariable)
        /// Fleet-wide positions cannot be given to the type ``RelayConfigurationError/name`` as
        /// asked (``RelayConfigurationError/reason``).
        public static let positionsUnavailable = Code(base: .positionsUnavailable)
        /// Presence cannot be used as asked (``RelayConfigurationError/reason``).
        public static let presenceUnavailable = Code(base: .presenceUnavailable)
        /// The database path ``RelayConfigurationError/name`` cannot be used
        /// (``RelayConfigurationError/reason``).
        public static let invalidDatabasePath = Code(base: .invalidDatabasePath)

        public var description: String {
            switch base {
            case .invalidChannelName: "invalidChannelName"
            case .invalidWireName: "invalidWireName"
            case .wireNameTaken: "wireNameTaken"
            case .typeAlreadyRegistered: "typeAlreadyRegistered"
            case .invalidTableName: "invalidTableName"
            case .keyTooShort: "keyTooShort"
            case .invalidEnvironmentVariable: "invalidEnvironmentVariable"
            case .positionsUnavailable: "positionsUnavailable"
            case .presenceUnavailable: "presenceUnavailable"
            case .invalidDatabasePath: "invalidDatabasePath"
            }
        }
    }

    /// What cannot be used.
    public let code: Code
    /// The name at fault: a channel, wire, table or environment variable name, or a type's name.
    public let name: String?
    /// What already holds the name: the type a wire name is taken by, or the wire name a type is
    /// registered as.
    public let registered: String?
    /// The value an environment variable holds.
    public let value: String?
    /// Why the name cannot be used, where there is more to say than the code.
    public let reason: String?
    /// The length of a key that is too short.
    public let bytes: Int?

    private init(
        _ code: Code,
        name: String? = nil,
        registered: String? = nil,
        value: String? = nil,
        reason: String? = nil,
        bytes: Int? = nil
    ) {
        self.code = code
        self.name = name
        self.registered = registered
        self.value = value
        self.reason = reason
        self.bytes = bytes
    }

    /// The channel name cannot be used with `LISTEN`/`NOTIFY` as given.
    public static func invalidChannelName(_ name: String, reason: String) -> RelayConfigurationError {
        RelayConfigurationError(.invalidChannelName, name: name, reason: reason)
    }

    /// A wire name for a mail or sender type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    public static func invalidWireName(_ name: String) -> RelayConfigurationError {
        RelayConfigurationError(.invalidWireName, name: name)
    }

    /// The wire name is already registered for another type.
    public static func wireNameTaken(_ name: String, by type: String) -> RelayConfigurationError {
        RelayConfigurationError(.wireNameTaken, name: name, registered: type)
    }

    /// The type is already registered under another wire name.
    public static func typeAlreadyRegistered(_ type: String, as name: String) -> RelayConfigurationError {
        RelayConfigurationError(.typeAlreadyRegistered, name: type, registered: name)
    }

    /// A table name for the durable mode: a lower-case SQL identifier of 1–63 characters.
    public static func invalidTableName(_ name: String, reason: String? = nil) -> RelayConfigurationError {
        RelayConfigurationError(.invalidTableName, name: name, reason: reason)
    }

    /// An authentication key shorter than 32 bytes, the length of its HMAC-SHA256 output.
    public static func keyTooShort(bytes: Int) -> RelayConfigurationError {
        RelayConfigurationError(.keyTooShort, bytes: bytes)
    }

    /// An environment variable that `connectionFromEnvironment(_:)` read holds
    /// something it cannot use, such as a `PGPORT` that is not a port number.
    public static func invalidEnvironmentVariable(_ name: String, value: String) -> RelayConfigurationError {
        RelayConfigurationError(.invalidEnvironmentVariable, name: name, value: value)
    }

    /// Shared positions (fleet-wide, host-wide) asked of a type where they cannot be had: in PostgreSQL's ephemeral mode,
    /// which keeps no table order; for a type registered before with the other kind; or once the
    /// relay runs.
    public static func positionsUnavailable(_ type: String, reason: String) -> RelayConfigurationError {
        RelayConfigurationError(.positionsUnavailable, name: type, reason: reason)
    }

    /// Presence asked for where it cannot be had: the relay's `Configuration.presence` is not
    /// set, its expiry is shorter than five heartbeats or its limit below 1, or a key, topic or
    /// metadata tracked is out of bounds (see `track(_:in:meta:)`).
    public static func presenceUnavailable(reason: String) -> RelayConfigurationError {
        RelayConfigurationError(.presenceUnavailable, reason: reason)
    }

    /// A database path the embedded relay cannot use: empty, or too long for the wake-up
    /// sockets beside it.
    public static func invalidDatabasePath(_ path: String, reason: String) -> RelayConfigurationError {
        RelayConfigurationError(.invalidDatabasePath, name: path, reason: reason)
    }

    /// The registry's refusal, as the error a relay throws.
    @_spi(AsyncMailRelay) public init(_ error: WireRegistry.RegistrationError) {
        switch error {
        case .invalidName(let name): self = .invalidWireName(name)
        case .wireNameTaken(let name, let type): self = .wireNameTaken(name, by: type)
        case .typeAlreadyRegistered(let type, let name): self = .typeAlreadyRegistered(type, as: name)
        case .positionsDiffer(let name):
            self = .positionsUnavailable(
                name,
                reason: "it was registered before with the other positions; register it once"
            )
        }
    }

    /// What cannot be used, and what to use instead.
    public var description: String {
        let name = name ?? ""
        return switch code.base {
        case .invalidChannelName: "invalid relay channel name \"\(name)\": \(reason ?? "")"
        case .invalidWireName: "invalid wire name \"\(name)\": use 1-100 of A-Z a-z 0-9 . _ -"
        case .wireNameTaken:
            "wire name \"\(name)\" is already registered for \(registered ?? "another type"): give each type its own"
        case .typeAlreadyRegistered:
            "\(name) is already registered as \"\(registered ?? "")\": register each type once"
        case .invalidTableName:
            "invalid table name \"\(name)\"\(reason.map { ": \($0)" } ?? ""): use a lower-case SQL identifier of 1-63 "
                + "characters"
        case .keyTooShort: "an authentication key of \(bytes ?? 0) bytes: use at least 32 random bytes"
        case .invalidEnvironmentVariable:
            "\(name)=\"\(value ?? "")\" cannot be used: fix or unset it (see the relay's connectionFromEnvironment)"
        case .positionsUnavailable: "\(name) cannot have shared positions: \(reason ?? "")"
        case .presenceUnavailable: "presence cannot be used so: \(reason ?? "")"
        case .invalidDatabasePath: "the database path \"\(name)\" cannot be used: \(reason ?? "")"
        }
    }
}
