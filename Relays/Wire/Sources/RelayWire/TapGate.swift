@_spi(AsyncMailInternal) import AsyncMail

/// Where posted mail enters the relay: it admits whole posts while the backlog allows, counts
/// what it refuses and everything else the relay gives up, and tracks how far forwarding has
/// got, for a graceful shutdown and for a relay's `flush()`.
///
/// The tap's filter calls ``admit(endingPost:)`` for each relayable mail at post time, in the
/// mailroom's one order; the forwarding loop calls ``forwardedOne()`` for each mail it handled.
@_spi(AsyncMailRelay) public final class TapGate: Sendable {
    /// What the forwarding loop must do after handling one mail.
    @_spi(AsyncMailRelay) public struct Progress: Sendable {
        /// Flushes waiting for what was posted before them to be forwarded, which now is: their
        /// markers go into the outbound queue, behind that mail.
        @_spi(AsyncMailRelay) public var matured: [FlushTicket] = []
        /// Posts refused since the last call, to report as a queue overflow.
        @_spi(AsyncMailRelay) public var refusedPosts = 0
        /// A graceful shutdown began and everything admitted before it is forwarded.
        @_spi(AsyncMailRelay) public var isDone = false
    }

    private struct State {
        var isOpen = false
        /// Mails admitted at post time, and mails the forwarding loop has handled.
        var admitted = 0
        var forwarded = 0
        /// Set at a graceful shutdown to `admitted`: forwarding stops once it gets there.
        var shutdownTarget: Int?
        /// Whether the next mail starts a post, and whether the post in progress is admitted:
        /// a post is admitted or refused whole, so that a batch never arrives in part.
        var startsPost = true
        var admittingPost = true
        var refusedPosts = 0
        /// Every mail the relay gave up on: refused here, too large, not queued, or dropped by
        /// a failed ephemeral publish.
        var lost = 0
        /// `lost` when the last flush returned.
        var lostAtLastFlush = 0
        var flushes: [(target: Int, ticket: FlushTicket)] = []
    }

    /// The most mails waiting between the tap and the forwarding loop when a post begins.
    private let backlogLimit: Int
    private let state = Guarded(State())

    @_spi(AsyncMailRelay) public init(backlogLimit: Int) {
        self.backlogLimit = max(backlogLimit, 1)
    }

    /// Mails admitted, forwarded and lost so far.
    @_spi(AsyncMailRelay) public var counts: (admitted: Int, forwarded: Int, lost: Int) {
        state.withLock { ($0.admitted, $0.forwarded, $0.lost) }
    }

    /// The relay runs: flushes are taken from now on.
    @_spi(AsyncMailRelay) public func open() {
        state.withLock { $0.isOpen = true }
    }

    /// The relay stopped: every flush still waiting is told so.
    @_spi(AsyncMailRelay) public func close() -> [FlushTicket] {
        state.withLock { state in
            state.isOpen = false
            defer { state.flushes = [] }
            return state.flushes.map(\.ticket)
        }
    }

    /// Whether to hand this mail to the relay. Called at post time; runs no user code.
    ///
    /// A `routed` post (a type with fleet-wide positions, which the relay delivers here too) is
    /// refused without being counted as lost once a graceful shutdown began: the mailroom then
    /// delivers it here at once, and only the rest of the fleet misses it, as for any post made
    /// after the relay stopped.
    @_spi(AsyncMailRelay) public func admit(endingPost: Bool, routed: Bool = false) -> Bool {
        state.withLock { state in
            if routed, state.shutdownTarget != nil || !state.isOpen { return false }
            if state.startsPost { state.admittingPost = state.admitted - state.forwarded < backlogLimit }
            state.startsPost = endingPost
            guard state.admittingPost else {
                state.lost += 1
                if endingPost { state.refusedPosts += 1 }
                return false
            }
            state.admitted += 1
            return true
        }
    }

    /// The forwarding loop handled one more mail.
    @_spi(AsyncMailRelay) public func forwardedOne() -> Progress {
        state.withLock { state in
            state.forwarded += 1
            var progress = Progress()
            if !state.flushes.isEmpty {
                let forwarded = state.forwarded
                progress.matured = state.flushes.filter { $0.target <= forwarded }.map(\.ticket)
                state.flushes.removeAll { $0.target <= forwarded }
            }
            swap(&progress.refusedPosts, &state.refusedPosts)
            progress.isDone = state.shutdownTarget.map { state.forwarded >= $0 } ?? false
            return progress
        }
    }

    /// Counts mails the relay gave up on after admitting them.
    @_spi(AsyncMailRelay) public func lose(_ mails: Int) {
        state.withLock { $0.lost += mails }
    }

    /// A graceful shutdown: forwarding stops once everything admitted so far is forwarded.
    /// Returns true when it is already.
    @_spi(AsyncMailRelay) public func beginShutdown() -> Bool {
        state.withLock { state in
            state.shutdownTarget = state.admitted
            return state.forwarded >= state.admitted
        }
    }

    /// A flush: returns `.queueNow` when everything admitted so far is forwarded already,
    /// `.waiting` when the forwarding loop will queue its marker, or `.notRunning`.
    @_spi(AsyncMailRelay) public func register(_ ticket: FlushTicket) -> (Registration, lostBefore: Int) {
        state.withLock { state in
            guard state.isOpen else { return (.notRunning, 0) }
            if state.forwarded >= state.admitted { return (.queueNow, state.lostAtLastFlush) }
            state.flushes.append((state.admitted, ticket))
            return (.waiting, state.lostAtLastFlush)
        }
    }

    @_spi(AsyncMailRelay) public enum Registration: Sendable {
        case queueNow, waiting, notRunning
    }

    /// A flush is done: how many mails were lost since `lostBefore`, and the new baseline.
    @_spi(AsyncMailRelay) public func settleFlush(since lostBefore: Int) -> Int {
        state.withLock { state in
            state.lostAtLastFlush = max(state.lostAtLastFlush, state.lost)
            return state.lost - lostBefore
        }
    }
}
