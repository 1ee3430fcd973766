@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

@_spi(AsyncMailRelay)
extension MailCarrier {
    /// Decides what to do with a row of a relay's table, and does it: a row of a type with
    /// shared positions is delivered with its positions, this relay's own too. False when the
    /// row was rejected.
    public func receive(_ row: StoredRow, payload: String, with receiver: InboundReceiver) async -> Bool {
        let isShared =
            row.stream.flatMap(RoomStream.wireName(of:)).flatMap { registry.mailCodec(named: String($0)) }?.isFleetWide
            ?? false
        var action = receiver.receive(payload, deliveringOwn: isShared)
        if row.channelFirst != nil {
            // The table's numbers report rows deleted before they were read, exactly and at once
            // (`RelayEvent.expired(mails:)`); an origin's numbers would count them again.
            action = action.withoutGaps
        }
        return await deliver(action, of: row, live: true)
    }

    /// Puts a row read as the relay starts into its type's history, without delivering it.
    public func keep(_ row: StoredRow, with receiver: InboundReceiver) async {
        guard let payload = row.payload else {
            rejectOversize(row: row.id, bytes: row.bytes)
            return
        }
        await deliver(receiver.receiveForHistory(payload), of: row, live: false)
    }

    /// Reports and counts a row too large to transfer (or not text), which was not read.
    public func rejectOversize(row: Int64, bytes: Int) {
        reporter.report(.rejected(reason: "row \(row) has \(bytes) bytes, over the limit of \(postLimit)")) {
            $0.rejected += 1
        }
    }

    /// Does what the receiver decided for a row, with the row's positions, checked: they come
    /// from the database.
    @discardableResult
    private func deliver(_ action: InboundReceiver.Action, of row: StoredRow, live: Bool) async -> Bool {
        guard case .deliver(let post, let sender, let notes) = action else {
            report(action)  // its notes: a rejection, an unknown type
            return !action.isRejection
        }
        guard let stream = row.stream else {
            // Written without positions (by a relay that registered the type `.local`):
            // delivered as such, and never routed again.
            if live {
                for note in notes { reporter.report(note) }
                await deliver(post, sender: sender)
            }
            return true
        }
        guard post.isFleetWide, RoomStream.wireName(of: stream) == Substring(post.wireName),
            let epoch = row.streamEpoch,
            epoch != 0,
            let first = row.streamFirst, first >= 1, row.mails == Int64(post.count),
            first <= Int64.max - Int64(post.count)
        else {
            reporter.report(
                .rejected(reason: "row \(row.id) holds positions that do not fit its \(post.wireName) post")
            ) {
                $0.rejected += 1
            }
            return false
        }
        for note in notes { reporter.report(note) }
        await deliver(post, sender: sender, positions: (UInt64(bitPattern: epoch), UInt64(first), live))
        return true
    }

    /// Reports what the receiver decided when it decided not to deliver.
    private func report(_ action: InboundReceiver.Action) {
        switch action {
        case .report(let notes):
            for note in notes { reporter.report(note) }
        case .readSpilled:
            // A table's rows never point at other rows: only PostgreSQL's ephemeral notices do.
            reporter.report(.rejected(reason: "a row holds a spill notice")) { $0.rejected += 1 }
        case .deliver:
            break
        }
    }

    /// Moves each shared-positions type's history on to the table's counters, after catching up
    /// on coming back: rows the retention deleted after the last one read are then known.
    public func moveOn(to counters: [StoredCounter]) {
        for codec in registry.fleetWideCodecs {
            for counter in counters where RoomStream.wireName(of: counter.stream) == Substring(codec.name) {
                moveOn(codec, to: counter)
            }
        }
    }

    private func moveOn(_ codec: WireRegistry.MailCodec, to counter: StoredCounter) {
        // From the database: a counter no relay writes moves nothing.
        guard counter.epoch != 0, counter.last >= 0, counter.last < Int64.max else {
            reporter.report(
                .rejected(reason: "the counter of \(codec.name) holds \(counter.last) in epoch \(counter.epoch)")
            ) {
                $0.rejected += 1
            }
            return
        }
        let sender: (any Hashable & Sendable)?
        do {
            sender = try RoomStream.sender(of: counter.stream, registry: registry)
        } catch {
            reporter.report(
                .rejected(reason: "a counter of \(codec.name) names no room this relay can decode: \(error)")
            ) {
                $0.rejected += 1
            }
            return
        }
        codec.moveOn(mailroom, sender, UInt64(bitPattern: counter.epoch), UInt64(counter.last) + 1)
    }
}

@_spi(AsyncMailRelay)
extension InboundReceiver.Action {
    /// Whether the payload was refused as not what a relay sends.
    public var isRejection: Bool {
        guard case .report(let notes) = self else { return false }
        return notes.contains { note in
            if case .rejected = note { return true }
            return false
        }
    }

    /// The same action, without gap notes.
    public var withoutGaps: Self {
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
