import Synchronization

/// The mail a type keeps for resuming subscriptions, with their positions, and the subscriptions
/// that take positions (see `Mailroom+History.swift`).
///
/// Posts of a type that keeps history, and subscriptions that resume from its history, take
/// ``withOrder(_:)`` in turn: a post holds it from before it captures its recipients until it has
/// delivered to them and appended to the history, so the history's order is the one every
/// subscriber of the type sees, and a resuming subscription reads the history and files itself
/// between two posts, missing none and hearing none twice. A type that keeps no history has no
/// `History` and pays one atomic load per post for the check.
@usableFromInline
final class History<M: Mail>: Sendable {
    /// A kept mail: its sequence number, its sender (for `from:` filters on replay), and when it
    /// was posted (for `maxAge`).
    struct Entry: Sendable {
        let mail: M
        let sequence: UInt64
        let sender: HistorySender
        let postedAt: ContinuousClock.Instant
    }

    /// Whose mail a subscription that takes positions hears.
    enum Pin: Sendable {
        case everyone
        /// One sender (`from: .only(x)`).
        case sender(HistorySender)
        /// Every sender of exactly this type (`fromAny:`).
        case senderType(ObjectIdentifier)

        /// Whether it is pinned to an object that has gone: such a subscription is ended, as one
        /// made with `subscribe(to:from:)` is, at the next post of the type or count.
        var hasDeparted: Bool {
            guard case .sender(let pinned) = self, case .object(let object) = pinned.kind else { return false }
            return object.object == nil
        }

        func hears(_ sender: HistorySender) -> Bool {
            switch self {
            case .everyone: true
            case .sender(let pinned): sender.matches(pinned)
            case .senderType(let type): sender.type == type
            }
        }
    }

    /// A subscription that takes positions.
    struct Subscriber: Sendable {
        let continuation: AsyncStream<Positioned<M>>.Continuation
        let pin: Pin
        let accepts: (@Sendable (M) -> Bool)?
        /// Set for a subscription with a backlog limit: a full buffer ends it.
        let endSignal: EndSignal?
        /// The sequence number it resumed after when this mailroom had not yet read that far in
        /// a relay's table (another instance was ahead): live mail up to it is not yielded again.
        var heardThrough: UInt64 = 0

        func hears(_ sender: HistorySender, _ mail: M) -> Bool {
            pin.hears(sender) && (accepts?(mail) ?? true)
        }
    }

    /// Hands a post of the type to a relay instead of delivering it (see ``route(through:)``):
    /// true when the relay took the post, which it delivers later with positions it was given.
    typealias Route = @Sendable ([PostedMail]) -> Bool

    struct State {
        /// Whose positions the kept mail has: the mailroom's epoch, or the one a relay's table
        /// gave (see ``prepare(epoch:first:count:)``).
        var epoch: UInt64
        /// Set while a relay routes the type through its table (see ``route(through:)``).
        var route: Route?
        /// The kept entries, oldest first, from `start` on. A dropped slot is set to nil and the
        /// entry handed out, so that its mail is released once no lock is held.
        var entries: [Entry?] = []
        var start = 0
        /// The sequence number the next mail gets; the ones below it were posted.
        var nextSequence: UInt64 = 1
        var limit: Int?
        var maxAge: Duration?
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
        var isClosed = false

        var keptCount: Int { entries.count - start }
        /// The kept entries, oldest first.
        var kept: [Entry] { entries[start...].compactMap { $0 } }

        /// The kept entries after `sequence`, oldest first. Kept sequence numbers run without a hole
        /// from ``firstKept``, so the first of them is found by subtraction.
        func kept(after sequence: UInt64) -> [Entry] {
            let skip = sequence < firstKept ? 0 : Int(clamping: sequence - firstKept + 1)
            guard skip < keptCount else { return [] }
            return entries[(start + skip)...].map { $0! }
        }
        /// The sequence number of the oldest kept mail, or `nextSequence` when none is kept.
        var firstKept: UInt64 { start < entries.count ? entries[start]!.sequence : nextSequence }

        /// Hands out the `count` oldest entries, leaving nil in their slots.
        mutating func dropOldest(_ count: Int) -> [Entry] {
            var dropped: [Entry] = []
            dropped.reserveCapacity(count)
            for index in start..<(start + count) {
                dropped.append(entries[index]!)
                entries[index] = nil
            }
            start += count
            if start >= 64, start * 2 >= entries.count {
                entries.removeFirst(start)  // only nils: no mail is released here
                start = 0
            }
            return dropped
        }

        /// Appends `entry`, and returns what retention dropped, to be released after unlocking.
        mutating func append(_ entry: Entry) -> [Entry] {
            entries.append(entry)
            var dropped: [Entry] = []
            if let limit, keptCount > limit { dropped = dropOldest(keptCount - limit) }
            return dropped + expire(now: entry.postedAt)
        }

        /// Drops the entries older than `maxAge`, and returns them.
        mutating func expire(now: ContinuousClock.Instant) -> [Entry] {
            guard let maxAge else { return [] }
            var stale = 0
            while start + stale < entries.count, now - entries[start + stale]!.postedAt > maxAge { stale += 1 }
            return stale == 0 ? [] : dropOldest(stale)
        }

        /// Applies new limits, and returns what they dropped.
        mutating func setLimits(count: Int?, maxAge: Duration?, now: ContinuousClock.Instant) -> [Entry] {
            (limit, self.maxAge) = (count, maxAge)
            var dropped: [Entry] = []
            if let count, keptCount > count { dropped = dropOldest(keptCount - count) }
            return dropped + expire(now: now)
        }

        /// Takes everything out, for closing.
        mutating func takeAll() -> [Entry] {
            defer { (entries, start) = ([], 0) }
            return kept
        }
    }

    /// This type's digest: what a position of this history carries, with the epoch.
    let stream: UInt32
    private let order = Locked()
    private let state: Locked<State>

    init(epoch: UInt64, count: Int?, maxAge: Duration?) {
        self.stream = History.digest(of: M.self)
        self.state = Locked(State(epoch: epoch, limit: count, maxAge: maxAge))
    }

    /// How far ahead of what this mailroom has read from a relay's table a position may be and
    /// still be waited for: a burst other instances read first, not a forged number.
    static var lead: UInt64 { 1 << 20 }

    /// The type's digest in positions: FNV-1a of its full name, stable across processes.
    static func digest(of type: Any.Type) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in String(reflecting: type).utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        return hash
    }

    /// Runs `body` between two posts of the type: no post of it is under way meanwhile.
    func withOrder<Result: Sendable>(_ body: () -> Result) -> Result {
        order.withLock(body)
    }

    func position(_ sequence: UInt64, epoch: UInt64) -> MailPosition {
        MailPosition(epoch: epoch, stream: stream, sequence: sequence)
    }

    /// The limits it keeps within.
    var limits: (count: Int?, maxAge: Duration?) { state.withLock { ($0.limit, $0.maxAge) } }

    /// The relay that routes the type, if one does.
    var route: Route? { state.withLock { $0.route } }

    /// Makes a relay route every post of the type through its table (`route`), or stops it
    /// (nil). Stopping starts a new epoch of this mailroom's own, dropping what is kept: the
    /// table's positions go on without this mailroom, so its own must not look like theirs.
    func route(through route: Route?) {
        let dropped = state.withLock { state -> [Entry] in
            let wasRouted = state.route != nil
            state.route = route
            guard wasRouted, route == nil else { return [] }
            state.epoch = UInt64.random(in: 1...UInt64.max)
            return state.takeAll()
        }
        withExtendedLifetime(dropped) {}
    }

    /// Readies the history for `count` mails whose positions a relay's table gave, starting at
    /// `first` in `epoch`, and returns how many of them, from the front, it already has (a row
    /// read twice): those are neither kept nor delivered again. Another epoch (the table was made
    /// anew) or a hole before `first` (rows deleted before this mailroom read them) drops what is
    /// kept, so the kept sequence numbers stay without a hole and a resume from before the hole
    /// is told exactly how many it missed. Called holding ``withOrder(_:)``.
    func prepare(epoch: UInt64, first: UInt64, count: Int) -> Int {
        let dropped = state.withLock { state -> (skip: Int, dropped: [Entry]) in
            if epoch != state.epoch {
                state.epoch = epoch
                state.nextSequence = first
                return (0, state.takeAll())
            }
            if first < state.nextSequence {
                return (Int(clamping: min(state.nextSequence - first, UInt64(count))), [])
            }
            guard first > state.nextSequence else { return (0, []) }
            state.nextSequence = first
            return (0, state.takeAll())
        }
        withExtendedLifetime(dropped.dropped) {}
        return dropped.skip
    }

    /// Changes the limits; what they drop is released after unlocking.
    func setLimits(count: Int?, maxAge: Duration?) {
        let dropped = state.withLock { $0.setLimits(count: count, maxAge: maxAge, now: .now) }
        withExtendedLifetime(dropped) {}
    }

    /// Appends posted mail and yields it to the subscriptions that take positions. Called by a post
    /// holding ``withOrder(_:)``, inside its delivery scope.
    ///
    /// With `live` false (a relay filling the history from its table as it starts), the mail is
    /// kept and yielded to nobody.
    func deliver(_ mails: [M], from sender: HistorySender, live: Bool = true) -> Receipt {
        let now = ContinuousClock.now
        let (subscribers, first, epoch, dropped) = state.withLock {
            state -> ([Subscriber], UInt64, UInt64, [Entry]) in
            let first = state.nextSequence
            var dropped: [Entry] = []
            for mail in mails {
                dropped += state.append(Entry(mail: mail, sequence: state.nextSequence, sender: sender, postedAt: now))
                state.nextSequence += 1
            }
            return (state.isClosed || !live ? [] : Array(state.subscribers.values), first, state.epoch, dropped)
        }
        var receipt = Receipt()
        for subscriber in subscribers {
            if subscriber.pin.hasDeparted {
                subscriber.continuation.finish()  // its termination handler takes it out
                continue
            }
            for (offset, mail) in mails.enumerated()
            where first + UInt64(offset) > subscriber.heardThrough && subscriber.hears(sender, mail) {
                let positioned = Positioned(mail: mail, position: position(first + UInt64(offset), epoch: epoch))
                switch subscriber.continuation.yield(positioned) {
                case .enqueued:
                    receipt.delivered += 1
                case .dropped:
                    if let endSignal = subscriber.endSignal {
                        // Past its backlog limit: ended now, as any bounded subscription is.
                        endSignal.end(.backlogLimitExceeded)
                        subscriber.continuation.finish()
                        receipt.ended += 1
                    } else {
                        receipt.dropped += 1
                    }
                case .terminated:
                    break
                @unknown default:
                    break
                }
            }
        }
        withExtendedLifetime(dropped) {}  // user values, released with no lock held
        return receipt
    }

    /// How a subscription that takes positions buffers: by a policy, or with a backlog limit. Either
    /// way the replay does not count: the buffer is made large enough for it, so that no kept
    /// mail is dropped on the way to a consumer that is resuming.
    enum Buffering {
        case policy(AsyncStream<Positioned<M>>.Continuation.BufferingPolicy)
        case bounded(EndSignal)

        func policy(replaying count: Int) -> AsyncStream<Positioned<M>>.Continuation.BufferingPolicy {
            switch self {
            case .policy(.bufferingOldest(let limit)): .bufferingOldest(max(limit, 0) + count)
            case .policy(.bufferingNewest(let limit)): .bufferingNewest(max(limit, 0) + count)
            case .policy(let policy): policy
            case .bounded(let endSignal): .bufferingOldest(endSignal.limit + count)
            }
        }

        var endSignal: EndSignal? {
            if case .bounded(let endSignal) = self { endSignal } else { nil }
        }
    }

    /// Files a subscription after `position` (nil: live from here) and yields what the history
    /// keeps after it; `ended` runs once when the subscription ends. Called holding
    /// ``withOrder(_:)``, inside a delivery scope, so no post of the type is under way.
    func subscribe(
        after position: MailPosition?,
        pin: Pin,
        buffering: Buffering,
        accepts: (@Sendable (M) -> Bool)?,
        ended: (@Sendable () -> Void)?
    ) -> Result<(HistoryGap?, RegisteredStream<Positioned<M>>), PositionError> {
        typealias Filed = (HistoryGap?, [Entry], UInt64, Int?, RegisteredStream<Positioned<M>>, Subscriber)
        let filed = state.withLock { state -> (Result<Filed, PositionError>, expired: [Entry]) in
            let expired = state.expire(now: .now)
            var gap: HistoryGap?
            var heardThrough: UInt64 = 0
            var after: UInt64 = state.nextSequence - 1  // live: nothing kept is replayed
            if let position {
                if position.epoch != state.epoch {
                    gap = HistoryGap(code: .otherEpoch, missed: nil)
                } else if position.stream != stream {
                    return (.failure(.otherMailType), expired)
                } else if position.sequence >= state.nextSequence {
                    // Routed through a relay's table, another instance may have read further:
                    // wait for that far, within a bound, so a forged position cannot silence it.
                    guard state.route != nil, position.sequence - state.nextSequence < History.lead else {
                        return (.failure(.notYetPosted(position.sequence, newest: state.nextSequence - 1)), expired)
                    }
                    heardThrough = position.sequence
                } else {
                    after = position.sequence
                    let first = state.firstKept
                    if after + 1 < first {
                        gap = HistoryGap(code: .expired, missed: Int(clamping: first - after - 1))
                        after = first - 1
                    }
                }
            }
            let replay = state.kept(after: after)
            let (stream, continuation) = AsyncStream.makeStream(
                of: Positioned<M>.self,
                bufferingPolicy: buffering.policy(replaying: replay.count)
            )
            let subscriber = Subscriber(
                continuation: continuation,
                pin: pin,
                accepts: accepts,
                endSignal: buffering.endSignal,
                heardThrough: heardThrough
            )
            let registered = RegisteredStream(stream: stream, continuation: continuation)
            guard !state.isClosed else {
                return (.success((gap, replay, state.epoch, nil, registered, subscriber)), expired)
            }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = subscriber
            return (.success((gap, replay, state.epoch, id, registered, subscriber)), expired)
        }
        withExtendedLifetime(filed.expired) {}  // user values, released with no lock held
        switch filed.0 {
        case .failure(let error):
            return .failure(error)
        case .success(let (gap, replay, epoch, id, registered, subscriber)):
            let continuation = registered._continuation
            for entry in replay where subscriber.hears(entry.sender, entry.mail) {
                continuation.yield(Positioned(mail: entry.mail, position: self.position(entry.sequence, epoch: epoch)))
            }
            if let id {
                let endSignal = buffering.endSignal
                continuation.onTermination = { [weak self] _ in
                    endSignal?.end(.finished)  // a no-op after an overflow, which ended it first
                    self?.remove(id)
                    ended?()
                }
            } else {
                buffering.endSignal?.end(.finished)
                continuation.finish()  // closed: the replay, then the end
                ended?()
            }
            return .success((gap, registered))
        }
    }

    private func remove(_ id: Int) {
        let removed = state.withLock { $0.subscribers.removeValue(forKey: id) }
        withExtendedLifetime(removed) {}
    }

    /// How many subscriptions take positions: all (`.everyone`), or those pinned exactly as `pin`.
    func count(pinnedTo pin: Pin) -> Int {
        let (count, departed) = state.withLock { state -> (Int, [Subscriber]) in
            // Those pinned to a departed object are taken out here and ended below, unlocked.
            let departed = state.subscribers.filter { $0.value.pin.hasDeparted }
            for id in departed.keys { state.subscribers[id] = nil }
            let count =
                switch pin {
                case .everyone:
                    state.subscribers.count
                case .sender(let sender):
                    state.subscribers.values.count {
                        if case .sender(let pinned) = $0.pin { pinned.matches(sender) } else { false }
                    }
                case .senderType(let type):
                    state.subscribers.values.count {
                        if case .senderType(let pinned) = $0.pin { pinned == type } else { false }
                    }
                }
            return (count, Array(departed.values))
        }
        for subscriber in departed { subscriber.continuation.finish() }
        return count
    }

    /// Ends every subscription and refuses new ones; the kept mail is released.
    func close() {
        let (subscribers, entries) = state.withLock { state in
            state.isClosed = true
            defer { state.subscribers = [:] }
            return (Array(state.subscribers.values), state.takeAll())
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
        withExtendedLifetime(entries) {}
    }
}
