/// A relay channel's name: the PostgreSQL `LISTEN` channel, and the key of its rows in durable mode.
///
/// Validated when made, because PostgreSQL fails late and quietly on bad names: it truncates a
/// name longer than 63 bytes on `LISTEN` but rejects it on `NOTIFY`, and an unquoted mixed-case
/// name is folded to lower case, so it never matches a `pg_notify` of the original. A name is
/// 1–63 characters of lower-case ASCII letters, digits and `_`, starting with a letter or `_`.
///
/// ```swift
/// let channel = try RelayChannel("chat_events")
/// ```
public struct RelayChannel: Sendable, Hashable, CustomStringConvertible {
    /// The name, exactly as PostgreSQL sees it.
    public let name: String

    /// Validates `name`; throws ``RelayConfigurationError/invalidChannelName(_:reason:)`` when it is unusable.
    public init(_ name: String) throws(RelayConfigurationError) {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { throw .invalidChannelName(name, reason: "it is empty") }
        guard bytes.count <= 63 else {
            throw .invalidChannelName(name, reason: "it is \(bytes.count) bytes; PostgreSQL allows 63")
        }
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        guard isLetter(bytes[0]) else {
            throw .invalidChannelName(name, reason: "it must start with a lower-case letter or _")
        }
        guard bytes.allSatisfy({ isLetter($0) || isDigit($0) }) else {
            throw .invalidChannelName(name, reason: "only lower-case a-z, 0-9 and _ are allowed")
        }
        self.name = name
    }

    public var description: String { name }
}
