import AsyncMail
import ServiceLifecycle

/// What every relay does, whatever carries its mail: `PostgresRelay` across machines,
/// `SQLiteRelay` between the processes of one host.
///
/// Code that sets a relay up, watches it or flushes it can take `some MailRelay` and work with
/// either; AsyncMail's contract tests run the same suite against each engine this way.
///
/// ```swift
/// func carry(_ relay: some MailRelay) throws {
///     try relay.register(ChatLine.self, as: "chat.line")
///     try relay.register(sender: RoomID.self, as: "room")
/// }
/// ```
public protocol MailRelay: Service, Sendable {
    /// The mailroom whose mail this relay carries.
    var mailroom: Mailroom { get }
    /// This relay's identity on the wire; unique per relay instance.
    var origin: String { get }
    /// What this relay has done so far.
    var counters: RelayCounters { get }

    /// Relays mail of type `M` under `name`, a wire name every process registers for the same
    /// type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    func register<M: Mail & Codable>(_ type: M.Type, as name: String) throws(RelayConfigurationError)

    /// Relays mail posted from senders of type `S` (such as a room id), under a wire name.
    func register<S: Hashable & Sendable & Codable>(
        sender type: S.Type,
        as name: String
    ) throws(RelayConfigurationError)

    /// The relay's events from now on; each call makes its own stream, which ends when the
    /// relay's `run()` returns or the stream is dropped.
    func events() -> AsyncStream<RelayEvent>

    /// Returns once everything posted to the mailroom before it has been published, so that a
    /// process killed afterwards loses none of it.
    func flush() async throws

    /// Tracks `key` in `topic` across every relay sharing the database, with `meta`; tracking it
    /// again changes its metadata. Throws `RelayConfigurationError.presenceUnavailable(reason:)`
    /// when the relay's configuration has no presence, or a value is out of bounds.
    func track(_ key: String, in topic: String, meta: [String: String]) throws(RelayConfigurationError)

    /// Stops tracking `key` in `topic`; nothing happens when it is not tracked.
    func untrack(_ key: String, in topic: String)

    /// Everyone in `topic`: this relay's entries as they are, the others' as last read, ordered
    /// by instance, then key.
    func presence(in topic: String) -> [PresenceEntry]

    /// `topic`'s presence as it changes: the whole list first, as joins, then each change.
    func presenceChanges(in topic: String) -> PresenceChanges
}
