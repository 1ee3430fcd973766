/// The numbering each origin's mail has shown this relay: which mails were delivered, which
/// are missing, and which arrive again.
///
/// Each origin numbers its mails 1, 2, 3… in the order it commits them, so a receiver knows
/// exactly what it lost (a number skipped) and what it already has (a number at or below the
/// last it delivered). Only posts move the delivered mark; a heartbeat, which carries nothing to
/// deliver, can only report numbers missing. So a forged heartbeat can never make real mail look
/// like a repeat.
///
/// Bounded: an origin unheard for `horizon` ticks is forgotten (ticks are counted while the
/// relay listens, so time spent disconnected does not count), and beyond `capacity` origins the
/// longest unheard half is forgotten at once. A forgotten origin's next mail is first contact.
@_spi(AsyncMailRelay) public struct OriginLedger: Sendable {
    /// What the ledger says about one received post.
    @_spi(AsyncMailRelay) public enum Verdict: Equatable, Sendable {
        /// New mail: deliver it; `missing` mails before it never arrived.
        case deliver(missing: Int)
        /// Every mail in it was delivered already: drop it.
        case duplicate
        /// Part new and part repeated, which no relay sends: drop it.
        case overlapping(delivered: Int)
    }

    private struct Record: Sendable {
        /// The number of the last mail delivered from this origin; 0 for none.
        var delivered: Int
        /// The highest number accounted for, delivered or reported missing; at least `delivered`.
        var accounted: Int
        /// The tick at which this origin was last heard.
        var heard: Int
    }

    private var records: [String: Record] = [:]
    private var tick = 0
    private let horizon: Int
    private let capacity: Int

    /// - Parameters:
    ///   - horizon: Ticks without mail after which an origin is forgotten.
    ///   - capacity: The most origins remembered.
    @_spi(AsyncMailRelay) public init(horizon: Int, capacity: Int = 10_000) {
        self.horizon = max(horizon, 1)
        self.capacity = max(capacity, 2)
    }

    /// How many origins are remembered.
    @_spi(AsyncMailRelay) public var count: Int { records.count }

    /// A post of mails `first...last` from `origin`. The wire layer has checked that
    /// `1 <= first <= last <= WireLimits.maximumNumber`.
    @_spi(AsyncMailRelay) public mutating func post(from origin: String, first: Int, last: Int) -> Verdict {
        guard var record = records[origin] else {
            // First contact: nothing before it was this relay's to see.
            remember(origin, Record(delivered: last, accounted: last, heard: tick))
            return .deliver(missing: 0)
        }
        record.heard = tick
        defer { records[origin] = record }
        if last <= record.delivered { return .duplicate }
        if first <= record.delivered { return .overlapping(delivered: record.delivered) }
        let missing = max(first - 1 - record.accounted, 0)
        record.delivered = last
        record.accounted = max(record.accounted, last)
        return .deliver(missing: missing)
    }

    /// A heartbeat: `origin` says its last mail is `last`. Returns how many mails that shows
    /// missing. The wire layer has checked that `0 <= last <= WireLimits.maximumNumber`.
    @_spi(AsyncMailRelay) public mutating func heartbeat(from origin: String, last: Int) -> Int {
        guard var record = records[origin] else {
            // First contact. Nothing delivered yet, so the delivered mark stays 0: a claim alone
            // never makes later mail look like a repeat.
            remember(origin, Record(delivered: 0, accounted: last, heard: tick))
            return 0
        }
        record.heard = tick
        let missing = max(last - record.accounted, 0)
        record.accounted = max(record.accounted, last)
        records[origin] = record
        return missing
    }

    /// Advances the clock by one tick and forgets the origins unheard for the horizon; returns
    /// how many it forgot.
    @discardableResult
    @_spi(AsyncMailRelay) public mutating func advance() -> Int {
        tick += 1
        let before = records.count
        let oldest = tick - horizon
        records = records.filter { $0.value.heard > oldest }
        return before - records.count
    }

    private mutating func remember(_ origin: String, _ record: Record) {
        if records.count >= capacity {
            // Flooded with origins (forged ones, most likely: a live relay is heard every
            // heartbeat): keep the recently heard half. Amortised O(log n) per new origin.
            let kept = records.sorted { $0.value.heard > $1.value.heard }.prefix(capacity / 2)
            records = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        records[origin] = record
    }
}
