/// The state of a relay's entry (``TapGate``), as a value: which posts it admits, what it holds,
/// which posts wait for room, how far forwarding has got, and which flushes are due.
///
/// Every event returns what to do once the lock is released (resume waiting posts, report
/// refused posts); the gate does it. No threads, no I/O: its transitions are tested as values.
///
/// What it holds, and the bound: `held` is every mail admitted and not yet forwarded, plus every
/// mail forwarded into the outbound queue and not yet taken by the publisher. A post starts only
/// while `held` plus the posts granted room (reserved, on their way to the tap) is under the
/// limit, and is then admitted whole, so one post can take it past the limit by its own size.
@_spi(AsyncMailRelay) public struct TapGateMachine: Sendable {
    /// A post waiting for room, by its number.
    @_spi(AsyncMailRelay) public typealias Waiter = Int

    /// What a post asking for room must do.
    @_spi(AsyncMailRelay) public enum Reservation: Sendable, Equatable {
        /// Room is reserved for it: post now.
        case reserved
        /// Wait: the number names it when it is granted room or gives up.
        case wait(Waiter)
        /// The relay is not running or is shutting down: post without room (the gate decides).
        case notRunning
    }

    /// What the forwarding loop must do after handling one mail.
    @_spi(AsyncMailRelay) public struct Progress: Sendable {
        /// Flushes waiting for what was posted before them to be forwarded, which now is: their
        /// markers go into the outbound queue, behind that mail.
        @_spi(AsyncMailRelay) public var matured: [FlushTicket] = []
        /// Posts refused since the last call, to report as a queue overflow.
        @_spi(AsyncMailRelay) public var refusedPosts = 0
        /// A graceful shutdown began and everything admitted before it is forwarded.
        @_spi(AsyncMailRelay) public var isDone = false
        /// Waiting posts granted room by this mail's leaving.
        @_spi(AsyncMailRelay) public var granted: [Waiter] = []
    }

    /// The most mails held when a post begins.
    @_spi(AsyncMailRelay) public let limit: Int
    @_spi(AsyncMailRelay) public private(set) var isOpen = false
    /// Mails admitted at post time, mails the forwarding loop has handled, and mails in the
    /// outbound queue.
    @_spi(AsyncMailRelay) public private(set) var admitted = 0
    @_spi(AsyncMailRelay) public private(set) var forwarded = 0
    @_spi(AsyncMailRelay) public private(set) var queued = 0
    /// Posts granted room that have not reached the gate yet.
    @_spi(AsyncMailRelay) public private(set) var reserved = 0
    /// Posts waiting for room, first come first served.
    @_spi(AsyncMailRelay) public private(set) var waiting: [Waiter] = []
    private var nextWaiter = 0
    /// Set at a graceful shutdown to `admitted`: forwarding stops once it gets there.
    private var shutdownTarget: Int?
    /// Whether the next mail starts a post, and whether the post in progress is admitted: a post
    /// is admitted or refused whole, so that a batch never arrives in part.
    @_spi(AsyncMailRelay) public private(set) var startsPost = true
    private var admittingPost = true
    private var refusedPosts = 0
    /// Whether the forwarding loop was woken to report `refusedPosts` and has not yet taken them.
    private var refusalWakePending = false
    /// Every mail the relay gave up on: refused here, too large, not queued, or dropped by a
    /// failed ephemeral publish.
    @_spi(AsyncMailRelay) public private(set) var lost = 0
    /// `lost` when the last flush returned.
    private var lostAtLastFlush = 0
    private var flushes: [(target: Int, ticket: FlushTicket)] = []

    @_spi(AsyncMailRelay) public init(limit: Int) {
        self.limit = max(limit, 1)
    }

    /// Mails admitted and not yet taken by the publisher.
    @_spi(AsyncMailRelay) public var held: Int { admitted - forwarded + queued }

    private var hasRoom: Bool { held + reserved < limit }

    /// The relay runs: flushes and reservations are taken from now on.
    @_spi(AsyncMailRelay) public mutating func open() {
        isOpen = true
    }

    /// The relay stopped: every flush still waiting is told so, and every waiting post goes on
    /// without room.
    @_spi(AsyncMailRelay) public mutating func close() -> (flushes: [FlushTicket], released: [Waiter]) {
        isOpen = false
        defer {
            flushes = []
            waiting = []
        }
        return (flushes.map(\.ticket), waiting)
    }

    /// An asynchronous post of a relayed type asks for room before it is made.
    @_spi(AsyncMailRelay) public mutating func reserve() -> Reservation {
        guard isOpen, shutdownTarget == nil else { return .notRunning }
        if waiting.isEmpty, hasRoom {
            reserved += 1
            return .reserved
        }
        nextWaiter += 1
        waiting.append(nextWaiter)
        return .wait(nextWaiter)
    }

    /// A waiting post gives up (its deadline passed, its task was cancelled): true when it was
    /// still waiting, false when it was granted room or released meanwhile.
    @_spi(AsyncMailRelay) public mutating func withdraw(_ waiter: Waiter) -> (wasWaiting: Bool, granted: [Waiter]) {
        guard let index = waiting.firstIndex(of: waiter) else { return (false, []) }
        waiting.remove(at: index)
        return (true, grant())  // the next in line may fit where this one did not wait its turn
    }

    /// A post granted room did not use it (its mail was not relayable after all).
    @_spi(AsyncMailRelay) public mutating func release() -> [Waiter] {
        reserved = max(reserved - 1, 0)
        return grant()
    }

    /// Whether to hand this mail to the relay, at post time. `reservation` is true when the post
    /// holds room this gate reserved for it and has not used yet.
    ///
    /// A `routed` post (a type with fleet-wide positions, which the relay delivers here too) is
    /// refused without being counted as lost once a graceful shutdown began: the mailroom then
    /// delivers it here at once, and only the rest of the fleet misses it, as for any post made
    /// after the relay stopped.
    @_spi(AsyncMailRelay) public mutating func admit(endingPost: Bool, routed: Bool, reservation: Bool) -> Bool {
        if startsPost, reservation { reserved = max(reserved - 1, 0) }  // spent, whatever follows
        if routed, shutdownTarget != nil || !isOpen { return false }
        if startsPost { admittingPost = reservation || hasRoom }
        startsPost = endingPost
        guard admittingPost else {
            lost += 1
            if endingPost { refusedPosts += 1 }
            return false
        }
        admitted += 1
        return true
    }

    /// The forwarding loop handled one more mail.
    @_spi(AsyncMailRelay) public mutating func forwardedOne() -> Progress {
        forwarded += 1
        var progress = Progress()
        if !flushes.isEmpty {
            progress.matured = flushes.filter { $0.target <= forwarded }.map(\.ticket)
            flushes.removeAll { $0.target <= forwarded }
        }
        progress.refusedPosts = takeRefusedPosts()
        progress.isDone = shutdownTarget.map { forwarded >= $0 } ?? false
        progress.granted = grant()
        return progress
    }

    /// A post was just refused: true when the forwarding loop must be woken to report it (once,
    /// until it takes the refusals), so that a refusal is reported when it happens, not when the
    /// next admitted mail comes by, which, with the relay full, may be never.
    @_spi(AsyncMailRelay) public mutating func needsWakeForRefusals() -> Bool {
        guard refusedPosts > 0, !refusalWakePending else { return false }
        refusalWakePending = true
        return true
    }

    /// The forwarding loop, woken, takes the posts refused since it last did, to report them.
    @_spi(AsyncMailRelay) public mutating func takeRefusedPosts() -> Int {
        refusalWakePending = false
        defer { refusedPosts = 0 }
        return refusedPosts
    }

    /// The forwarding loop put `mails` into the outbound queue (before it counts the post's last
    /// mail forwarded, so that what it holds never dips).
    @_spi(AsyncMailRelay) public mutating func enqueued(_ mails: Int) {
        queued += mails
    }

    /// The publisher took `mails` out of the outbound queue.
    @_spi(AsyncMailRelay) public mutating func taken(_ mails: Int) -> [Waiter] {
        queued = max(queued - mails, 0)
        return grant()
    }

    /// Counts mails the relay gave up on after admitting them.
    @_spi(AsyncMailRelay) public mutating func lose(_ mails: Int) {
        lost += mails
    }

    /// A graceful shutdown: forwarding stops once everything admitted so far is forwarded, and
    /// waiting posts go on without room. `isDone` when everything is forwarded already.
    @_spi(AsyncMailRelay) public mutating func beginShutdown() -> (isDone: Bool, released: [Waiter]) {
        shutdownTarget = admitted
        defer { waiting = [] }
        return (forwarded >= admitted, waiting)
    }

    /// Whether a flush can be queued at once, must wait for the forwarding loop, or finds the
    /// relay stopped; and the losses counted when the last flush returned.
    @_spi(AsyncMailRelay) public enum Registration: Sendable {
        case queueNow, waiting, notRunning
    }

    /// A flush: `.queueNow` when everything admitted so far is forwarded already, `.waiting`
    /// when the forwarding loop will queue its marker, or `.notRunning`.
    @_spi(AsyncMailRelay) public mutating func register(_ ticket: FlushTicket) -> (Registration, lostBefore: Int) {
        guard isOpen else { return (.notRunning, 0) }
        if forwarded >= admitted { return (.queueNow, lostAtLastFlush) }
        flushes.append((admitted, ticket))
        return (.waiting, lostAtLastFlush)
    }

    /// A flush is done: how many mails were lost since `lostBefore`.
    @_spi(AsyncMailRelay) public mutating func settleFlush(since lostBefore: Int) -> Int {
        lostAtLastFlush = max(lostAtLastFlush, lost)
        return lost - lostBefore
    }

    /// Grants room to waiting posts, first come first served, while there is room.
    private mutating func grant() -> [Waiter] {
        var granted: [Waiter] = []
        while !waiting.isEmpty, hasRoom {
            granted.append(waiting.removeFirst())
            reserved += 1
        }
        return granted
    }
}
