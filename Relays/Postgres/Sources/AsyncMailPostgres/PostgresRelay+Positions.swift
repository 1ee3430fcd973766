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
            throw Self.configurationError(error)
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
                for row in rows {
                    guard let payload = row.payload else {
                        rejectOversize(row: row.id, bytes: row.bytes)
                        continue
                    }
                    try await deliver(receiver.receiveForHistory(payload), of: row, live: false)
                }
            }
            for counter in start.counters where RoomStream.wireName(of: counter.stream) == Substring(codec.name) {
                moveOn(codec, to: counter)
            }
        }
    }

    /// Moves each fleet-wide type's history on to the table's newest position, after catching
    /// up on coming back: rows the retention deleted after the last one read are then known.
    func moveOn(to counters: [DurableMode.Counter]) {
        for codec in registry.fleetWideCodecs {
            for counter in counters where RoomStream.wireName(of: counter.stream) == Substring(codec.name) {
                moveOn(codec, to: counter)
            }
        }
    }

    private func moveOn(_ codec: WireRegistry.MailCodec, to counter: DurableMode.Counter) {
        // From the database: a counter no relay writes moves nothing.
        guard counter.epoch != 0, counter.last >= 0, counter.last < Int64.max else {
            report(.rejected(reason: "the counter of \(codec.name) holds \(counter.last) in epoch \(counter.epoch)")) {
                $0.rejected += 1
            }
            return
        }
        let sender: (any Hashable & Sendable)?
        do {
            sender = try RoomStream.sender(of: counter.stream, registry: registry)
        } catch {
            report(.rejected(reason: "a counter of \(codec.name) names no room this relay can decode: \(error)")) {
                $0.rejected += 1
            }
            return
        }
        codec.moveOn(mailroom, sender, UInt64(bitPattern: counter.epoch), UInt64(counter.last) + 1)
    }

    /// Decides what to do with a durable row, and does it: a row of a fleet-wide type is
    /// delivered with its positions, this relay's own too. False when the row was rejected.
    func receive(_ row: DurableMode.Row, payload: String) async throws -> Bool {
        let isFleetWide =
            row.stream.flatMap(RoomStream.wireName(of:)).flatMap { registry.mailCodec(named: String($0)) }?.isFleetWide
            ?? false
        var action = receiver.receive(payload, deliveringOwn: isFleetWide)
        if row.channelFirst != nil {
            // The channel's numbers report rows deleted before they were read, exactly and at
            // once (`RelayEvent.expired(mails:)`); an origin's numbers would count them again.
            action = action.withoutGaps
        }
        return try await deliver(action, of: row, live: true)
    }

    /// Does what the receiver decided for a durable row, with the row's positions, checked: they
    /// come from the database.
    @discardableResult
    private func deliver(_ action: InboundReceiver.Action, of row: DurableMode.Row, live: Bool) async throws -> Bool {
        guard case .deliver(let post, _, _) = action else {
            try await perform(action) { _ in nil }  // its notes: a rejection, an unknown type
            return !action.isRejection
        }
        guard let stream = row.stream else {
            // Written without positions (by a relay that registered the type `.local`):
            // delivered as such, and never routed again.
            if live { try await perform(action) { _ in nil } }
            return true
        }
        guard post.isFleetWide, RoomStream.wireName(of: stream) == Substring(post.wireName),
            let epoch = row.streamEpoch,
            epoch != 0,
            let first = row.streamFirst, first >= 1, row.mails == Int64(post.count),
            first <= Int64.max - Int64(post.count)
        else {
            report(.rejected(reason: "row \(row.id) holds positions that do not fit its \(post.wireName) post")) {
                $0.rejected += 1
            }
            return false
        }
        try await perform(action, positions: (UInt64(bitPattern: epoch), UInt64(first), live)) { _ in nil }
        return true
    }
}

extension InboundReceiver.Action {
    /// Whether the payload was refused as not what a relay sends.
    var isRejection: Bool {
        guard case .report(let notes) = self else { return false }
        return notes.contains { note in
            if case .rejected = note { return true }
            return false
        }
    }

    /// The same action, without gap notes.
    var withoutGaps: Self {
        func keep(_ note: InboundReceiver.Note) -> Bool {
            if case .gap = note { return false }
            return true
        }
        switch self {
        case .deliver(let post, let sender, let notes): return .deliver(post, sender: sender, notes: notes.filter(keep))
        case .report(let notes): return .report(notes.filter(keep))
        case .readSpilled: return self
        }
    }
}
