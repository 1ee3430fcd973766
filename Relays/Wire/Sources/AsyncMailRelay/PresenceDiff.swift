/// What changed in a topic's presence since the previous diff: who joined, who left.
///
/// An entry whose metadata changed leaves with the old and joins with the new, as in
/// Phoenix.Presence. Both lists are ordered by instance, then key.
///
/// ```swift
/// for await diff in relay.presenceChanges(in: "lobby") {
///     members.subtract(diff.leaves.map(\.key))
///     members.formUnion(diff.joins.map(\.key))
/// }
/// ```
public struct PresenceDiff: Sendable, Hashable {
    /// Entries that are in the topic now and were not, or were with other metadata.
    public var joins: [PresenceEntry]
    /// Entries that were in the topic and are not, or are with other metadata.
    public var leaves: [PresenceEntry]

    /// A diff of `joins` and `leaves`.
    public init(joins: [PresenceEntry] = [], leaves: [PresenceEntry] = []) {
        self.joins = joins
        self.leaves = leaves
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { joins.isEmpty && leaves.isEmpty }

    /// What turns `before` into `after`.
    @_spi(AsyncMailRelay) public static func between(
        _ before: [PresenceEntry.ID: PresenceEntry],
        _ after: [PresenceEntry.ID: PresenceEntry]
    )
        -> PresenceDiff
    {
        var diff = PresenceDiff()
        for (id, entry) in after where before[id] != entry { diff.joins.append(entry) }
        for (id, entry) in before where after[id] != entry { diff.leaves.append(entry) }
        diff.joins.sort { $0.id < $1.id }
        diff.leaves.sort { $0.id < $1.id }
        return diff
    }
}
