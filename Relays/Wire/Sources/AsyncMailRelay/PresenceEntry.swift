/// One tracked key in a topic, as every instance of the fleet lists it.
///
/// The same key tracked by two instances (a user connected to both) is two entries: an entry is
/// its ``instance`` and its ``key``. Entries compare equal when all three fields do.
///
/// ```swift
/// for entry in relay.presence(in: "lobby") {
///     print(entry.key, entry.meta["name"] ?? "", entry.instance == relay.origin ? "here" : "elsewhere")
/// }
/// ```
public struct PresenceEntry: Sendable, Hashable, CustomStringConvertible {
    /// What was tracked: a connection's id, a user's.
    public let key: String
    /// What the tracker said about it; at most 4,096 bytes as JSON.
    public let meta: [String: String]
    /// The `origin` of the relay that tracks it.
    public let instance: String

    /// An entry; the relay makes them, tests compare against them.
    public init(key: String, meta: [String: String] = [:], instance: String) {
        self.key = key
        self.meta = meta
        self.instance = instance
    }

    public var description: String { "\(key)@\(instance.prefix(8))" }

    /// What makes an entry one: its instance and key.
    @_spi(AsyncMailRelay) public struct ID: Hashable, Comparable, Sendable {
        public let instance: String
        public let key: String

        public static func < (lhs: ID, rhs: ID) -> Bool {
            (lhs.instance, lhs.key) < (rhs.instance, rhs.key)
        }
    }

    @_spi(AsyncMailRelay) public var id: ID { ID(instance: instance, key: key) }
}
