/// A relay's presence settings: how long a silent instance stays listed, and how many entries
/// of other instances a relay keeps. Every engine takes the same (`PostgresRelay.Presence` and
/// `SQLiteRelay.Presence` name this type).
///
/// Each relay writes the entries it tracks with a heartbeat every heartbeat interval of its
/// engine, and reads the others' when told their topic changed.
///
/// - Expiry: an instance that stops beating (killed, or cut off from the database) is removed
///   from every list within `expiry` by the first live instance that notices, which reports
///   `RelayEvent.presenceExpired(instance:entries:)`. An instance removed that way while still
///   alive writes its entries again on its next heartbeat.
/// - A clean stop (the relay's `run()` returning) removes the instance's entries at once.
///
/// ```swift
/// let presence = RelayPresence(expiry: .seconds(15))
/// precondition(presence.maximumEntries == 100_000)
/// ```
public struct RelayPresence: Sendable, Hashable {
    /// How long after an instance's last heartbeat its entries are gone from every list: at
    /// least five heartbeats. A live instance is taken for dead only after missing three in a
    /// row (its entries are then removed early, two heartbeats before the expiry, so that they
    /// are gone within it).
    public var expiry: Duration
    /// How many entries of other instances this relay keeps, in all topics; more are left out of
    /// its lists and reported (`RelayEvent.rejected(reason:)`), so a flooded table cannot grow
    /// memory without bound.
    public var maximumEntries: Int

    /// Presence with an expiry of `expiry` (15 s unless set) and at most `maximumEntries`
    /// entries of other instances.
    public init(expiry: Duration = .seconds(15), maximumEntries: Int = 100_000) {
        self.expiry = expiry
        self.maximumEntries = maximumEntries
    }

    /// The settings, checked against the engine's heartbeat: an expiry of five heartbeats or
    /// more (so that a live instance must miss three in a row to be taken for dead), a limit of
    /// 1 or more.
    @_spi(AsyncMailRelay) public func validated(heartbeat: Duration) throws(RelayConfigurationError) {
        guard expiry >= heartbeat * 5 else {
            throw .presenceUnavailable(reason: "an expiry of \(expiry) is under five heartbeats of \(heartbeat)")
        }
        guard maximumEntries >= 1 else {
            throw .presenceUnavailable(reason: "maximumEntries of \(maximumEntries); use 1 or more")
        }
    }
}
