@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Whose positions a relayed type's mail carries: this mailroom's own, or the relay table's,
    /// which every instance of the fleet shares.
    ///
    /// A struct rather than an enum, so that a kind added later breaks no one's `switch`.
    public struct Positions: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable { case local, fleetWide }
        let base: Base

        /// Positions of this mailroom's own (see `Mailroom.retainHistory`): delivered here at
        /// once, but a position is good only on the instance that gave it. The default.
        public static let local = Positions(base: .local)
        /// The relay table's positions, the same on every instance: a client that comes back to
        /// any instance resumes where it left off, and a new instance fills the type's history
        /// from the table. Posts of the type are delivered here, too, only once their row is
        /// committed and read back, in the table's order. Durable mode only.
        public static let fleetWide = Positions(base: .fleetWide)

        public var description: String {
            switch base {
            case .local: "local"
            case .fleetWide: "fleetWide"
            }
        }
    }

    /// Relays mail of type `M` under `name`, with the positions `positions` asks for.
    ///
    /// With ``Positions/fleetWide`` every post of the type goes through the table first: the
    /// table numbers it (per type, the order every subscriber shares), and every instance,
    /// this one too, delivers it as it reads the row, with that number as its position. So a
    /// position given to a client by one instance resumes on any other, with no gap and no
    /// duplicate, within the table's retention; a new instance fills the type's history from the
    /// table as it starts (the mailroom's `retainHistory` limits, set before ``run()``); and rows
    /// the retention deleted before an instance read them are reported the moment it comes back
    /// (`RelayEvent.expired(mails:)`) and given to resuming clients as an exact count.
    ///
    /// What that costs: a post reaches local subscribers after a commit and a read, not at once
    /// (measured in `Benchmarks/README.md`). A post the relay cannot take while it runs (its queue
    /// is full, the relay is shutting down, or the sender is not relayed) has no position: it is
    /// delivered here at once to the subscriptions without positions only, is not kept, and is
    /// reported as usual. Before ``run()`` and after it returns, posts get positions of the
    /// mailroom's own. A mail too large to relay is reported
    /// `RelayEvent.oversize(type:bytes:)` and reaches no one. On a graceful shutdown the relay
    /// stops taking posts first (later ones are delivered here at once), publishes those it took,
    /// then stops listening: the other instances deliver them, but this one may stop before it
    /// has read its last ones back.
    ///
    /// ```swift
    /// await mailroom.retainHistory(ChatLine.self, count: 1_000)
    /// try relay.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
    /// ```
    ///
    /// - Throws: `RelayConfigurationError` as ``register(_:as:)`` does; and
    ///   `RelayConfigurationError.Code.positionsUnavailable` for fleet-wide positions in the
    ///   ephemeral mode, once the relay runs, or for a type registered before with `.local`.
    public func register<M: Mail & Codable>(
        _ type: M.Type,
        as name: String,
        positions: Positions
    ) throws(RelayConfigurationError) {
        let fleetWide = positions == .fleetWide
        if fleetWide {
            guard case .durable = mode else {
                throw .positionsUnavailable(
                    String(reflecting: M.self),
                    reason: "the ephemeral mode keeps no table order; use .durable(retention:)"
                )
            }
            guard !state.withLock({ $0.hasStarted }) else {
                throw .positionsUnavailable(String(reflecting: M.self), reason: "register it before run()")
            }
        }
        do { try registry.register(M.self, as: name, fleetWide: fleetWide) } catch {
            throw RelayConfigurationError(error)
        }
    }

    /// As the relay starts: fills each fleet-wide type's history with the table's newest rows up
    /// to where reading starts, and moves it on to the table's newest position, so that a
    /// position given by another instance resumes here too.
    func fillHistories(
        from start: RelayTable.Start,
        with durable: DurableMode,
        on connection: PostgresConnection
    )
        async throws
    {
        for codec in registry.fleetWideCodecs {
            if let limits = codec.historyLimits(mailroom), limits.count != 0 || limits.maxAge != nil {
                let rows = try await durable.newestRows(
                    of: codec.name,
                    through: start.newest,
                    count: limits.count,
                    maxAge: limits.maxAge,
                    maximumBytes: rowLimit,
                    on: connection
                )
                for row in rows { await carrier.keep(row, with: receiver) }
            }
        }
        carrier.moveOn(to: start.counters)
    }
}
