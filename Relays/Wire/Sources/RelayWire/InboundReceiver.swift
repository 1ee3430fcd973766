@_spi(AsyncMailInternal) import AsyncMail

/// Turns received payloads into what the relay does with them, with no I/O of its own: the
/// relay reads spilled rows and posts mail, this decides. Kept apart from PostgreSQL so that
/// tests and the fuzzer drive it directly.
///
/// Every payload is untrusted (see ``WireLimits``). Whatever it holds, this never traps, never
/// allocates beyond the payload's size and the ledger's bound, and touches the accounting of
/// no origin but the one the payload names.
@_spi(AsyncMailRelay) public final class InboundReceiver: Sendable {
    /// What the relay must do with one payload.
    @_spi(AsyncMailRelay) public enum Action: Sendable {
        /// Deliver the post after reporting `notes` (a gap before it, say).
        case deliver(InboundPost, sender: (any Hashable & Sendable)?, notes: [Note])
        /// Ephemeral mode: read the row a spill notice names, then call ``receiveSpilled(_:for:)``.
        case readSpilled(SpillNotice)
        /// Nothing to deliver; report `notes` (none for the relay's own mail coming back).
        case report([Note])
    }

    /// Something to report and count.
    @_spi(AsyncMailRelay) public enum Note: Equatable, Sendable {
        case gap(origin: String, missing: Int)
        case duplicate(mails: Int)
        case unknownType(String, mails: Int)
        case decodeFailed(type: String, reason: String, mails: Int)
        case rejected(reason: String)
    }

    /// A spill notice, not yet trusted: the row it names must hold a verified post with the same
    /// origin, number and count.
    @_spi(AsyncMailRelay) public struct SpillNotice: Sendable, Equatable {
        @_spi(AsyncMailRelay) public let origin: String
        @_spi(AsyncMailRelay) public let firstNumber: Int
        @_spi(AsyncMailRelay) public let count: Int
        @_spi(AsyncMailRelay) public let row: Int64
    }

    private let registry: WireRegistry
    private let signer: PayloadSigner?
    private let ownOrigin: String
    private let ownStart: String
    /// Ephemeral mode only: a durable row never holds a spill notice.
    private let followsSpillNotices: Bool
    private let ledger: Guarded<OriginLedger>

    /// - Parameters:
    ///   - ownOrigin: This relay's origin: its own payloads, back from the database, are dropped
    ///     before decoding.
    ///   - followsSpillNotices: Whether a spill notice is followed to its row (ephemeral mode) or
    ///     rejected (durable mode, whose rows never hold one).
    ///   - forgetAfter: Ticks (see ``tick()``) after which an unheard origin is forgotten.
    @_spi(AsyncMailRelay) public init(
        registry: WireRegistry,
        signer: PayloadSigner?,
        ownOrigin: String,
        followsSpillNotices: Bool = true,
        forgetAfter: Int
    ) {
        self.registry = registry
        self.signer = signer
        self.ownOrigin = ownOrigin
        self.ownStart = OutboundPost.start(origin: ownOrigin)
        self.followsSpillNotices = followsSpillNotices
        self.ledger = Guarded(OriginLedger(horizon: forgetAfter))
    }

    /// How many origins the ledger remembers.
    @_spi(AsyncMailRelay) public var rememberedOrigins: Int { ledger.withLock { $0.count } }

    /// One tick of listening time: origins unheard for the horizon are forgotten.
    @_spi(AsyncMailRelay) public func tick() {
        ledger.withLock { _ = $0.advance() }
    }

    /// Decides what to do with one payload: a notification, or a durable row.
    ///
    /// - Parameter deliveringOwn: Whether this relay's own mail is delivered too: a durable row
    ///   of a type with fleet-wide positions, which the posting process hears only from the table.
    @_spi(AsyncMailRelay) public func receive(_ payload: String, deliveringOwn: Bool = false) -> Action {
        // Every relay of a fleet receives everything published on its channel, its own mail too.
        if !deliveringOwn, PayloadSigner.unsigned(payload, signed: signer != nil).starts(with: ownStart.utf8) {
            return .report([])
        }
        switch registry.decode(payload, signer: signer) {
        case .heartbeat(let origin, let last):
            let missing = ledger.withLock { $0.heartbeat(from: origin, last: last) }
            return .report(missing > 0 ? [.gap(origin: origin, missing: missing)] : [])
        case .post(let origin, let first, let count, let content):
            return accept(content, from: origin, first: first, count: count)
        case .spilled(let origin, let first, let count, let row):
            guard followsSpillNotices else { return .report([.rejected(reason: "a spill notice in a durable row")]) }
            return .readSpilled(SpillNotice(origin: origin, firstNumber: first, count: count, row: row))
        case .rejected(let reason):
            return .report([.rejected(reason: reason)])
        }
    }

    /// Decides what to do with the row a spill notice named: `nil` when there is no such row (it
    /// outlived the spill retention) or it could not be read. Those mails are not counted here:
    /// the notice itself is unverified, and the origin's next post or heartbeat reports them.
    @_spi(AsyncMailRelay) public func receiveSpilled(_ row: String?, for notice: SpillNotice) -> Action {
        guard let row else { return .report([]) }
        switch registry.decode(row, signer: signer) {
        case .post(let origin, let first?, let count, let content)
        where origin == notice.origin && first == notice.firstNumber && count == notice.count:
            return accept(content, from: origin, first: first, count: count)
        case .rejected(let reason):
            return .report([.rejected(reason: "row \(notice.row): \(reason)")])
        case .post, .heartbeat, .spilled:
            return .report([.rejected(reason: "row \(notice.row) does not hold the post its notice names")])
        }
    }

    /// Decides what to do with a durable row read to fill a history as the relay starts, which
    /// the relay's reading has not reached and never will: checked as any payload is, but kept
    /// out of the origins' accounting.
    @_spi(AsyncMailRelay) public func receiveForHistory(_ payload: String) -> Action {
        switch registry.decode(payload, signer: signer) {
        case .post(let origin, _, let count, let content):
            return accept(content, from: origin, first: nil, count: count)
        case .rejected(let reason):
            return .report([.rejected(reason: reason)])
        case .heartbeat, .spilled:
            return .report([.rejected(reason: "a durable row that holds no post")])
        }
    }

    private func accept(_ content: InboundContent, from origin: String, first: Int?, count: Int) -> Action {
        var notes: [Note] = []
        if let first {
            // The wire layer checked both, so this cannot overflow.
            let verdict = ledger.withLock { $0.post(from: origin, first: first, last: first + count - 1) }
            switch verdict {
            case .deliver(let missing):
                if missing > 0 { notes.append(.gap(origin: origin, missing: missing)) }
            case .duplicate:
                return .report([.duplicate(mails: count)])
            case .overlapping(let delivered):
                return .report([
                    .rejected(
                        reason: "mails \(first)+\(count) from \(origin) overlap those delivered up to \(delivered)"
                    )
                ])
            }
        }
        switch content {
        case .decoded(var post, let sender):
            post.isOwn = origin == ownOrigin
            return .deliver(post, sender: sender, notes: notes)
        case .unknownType(let name):
            return .report(notes + [.unknownType(name, mails: count)])
        case .failed(let type, let reason):
            return .report(notes + [.decodeFailed(type: type, reason: reason, mails: count)])
        }
    }
}

extension InboundReceiver.Action {
    /// What this action breaks of the receiver's promises, or nil: every count in it is in
    /// `1...WireLimits.maximumNumber`, every origin valid. The fuzzer and the tests check it.
    @_spi(AsyncMailRelay) public var brokenPromise: String? {
        let notes: [InboundReceiver.Note]
        switch self {
        case .deliver(let post, _, let found):
            guard (1...WireLimits.maximumNumber).contains(post.count) else {
                return "delivers \(counting(post.count, "mail"))"
            }
            notes = found
        case .report(let found):
            notes = found
        case .readSpilled(let notice):
            guard notice.row >= 1, notice.count >= 1, notice.firstNumber >= 1,
                notice.firstNumber - 1 <= WireLimits.maximumNumber - notice.count
            else { return "an unchecked spill notice \(notice)" }
            notes = []
        }
        for note in notes {
            switch note {
            case .gap(let origin, let missing):
                guard WireLimits.isValidOrigin(origin), (1...WireLimits.maximumNumber).contains(missing) else {
                    return "gap of \(missing) from \(origin)"
                }
            case .duplicate(let mails), .unknownType(_, let mails), .decodeFailed(_, _, let mails):
                guard (1...WireLimits.maximumNumber).contains(mails) else { return "\(note) counts \(mails)" }
            case .rejected(let reason):
                guard !reason.isEmpty else { return "a rejection without a reason" }
            }
        }
        return nil
    }
}
