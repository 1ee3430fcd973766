@_spi(AsyncMailInternal) import AsyncMail
import Synchronization

/// Where posted mail enters the relay: it admits whole posts while the relay holds fewer mails
/// than its limit, makes an asynchronous post wait for room when it does not (backpressure),
/// counts what it refuses and everything else the relay gives up, and tracks how far forwarding
/// has got, for a graceful shutdown and for a relay's `flush()`.
///
/// The tap's filter calls ``admit(endingPost:routed:)`` for each relayable mail at post time, in
/// the mailroom's one order; the forwarding loop calls ``forwardedOne()`` for each mail it
/// handled, ``enqueued(_:)`` for what it queued, and the publisher ``taken(_:)`` for what it
/// took. The state is a ``TapGateMachine``; this class locks it and resumes waiting posts after
/// unlocking.
@_spi(AsyncMailRelay) public final class TapGate: Sendable {
    /// Room reserved for one asynchronous post, bound to its task while it posts: the tap filter
    /// spends it on the post's first mail.
    @_spi(AsyncMailRelay) public final class Reservation: Sendable {
        fileprivate let gate: ObjectIdentifier
        fileprivate let isSpent = Atomic<Bool>(false)
        fileprivate init(gate: ObjectIdentifier) { self.gate = gate }
    }

    /// The reservations of the post this task is making, one per relay that admitted it.
    @TaskLocal @_spi(AsyncMailRelay) public static var reservations: [Reservation] = []

    /// The machine, and the waiting posts' continuations, under one lock.
    private struct State {
        var machine: TapGateMachine
        /// The waiting posts, by number: resumed with true when granted room, false when not.
        var continuations: [TapGateMachine.Waiter: CheckedContinuation<Bool, Never>] = [:]
        /// Outcomes that came before their waiter stored its continuation.
        var early: [TapGateMachine.Waiter: Bool] = [:]

        /// Takes the continuations of `numbers` to resume with `granted`, or leaves the outcome
        /// for a waiter that has not stored one yet.
        mutating func resolve(
            _ numbers: [TapGateMachine.Waiter],
            granted: Bool
        ) -> [(CheckedContinuation<Bool, Never>, Bool)] {
            var resuming: [(CheckedContinuation<Bool, Never>, Bool)] = []
            for number in numbers {
                if let continuation = continuations.removeValue(forKey: number) {
                    resuming.append((continuation, granted))
                } else {
                    early[number] = granted
                }
            }
            return resuming
        }
    }

    private let state: Guarded<State>

    @_spi(AsyncMailRelay) public init(backlogLimit: Int) {
        self.state = Guarded(State(machine: TapGateMachine(limit: backlogLimit)))
    }

    /// Mails admitted, forwarded and lost so far.
    @_spi(AsyncMailRelay) public var counts: (admitted: Int, forwarded: Int, lost: Int) {
        state.withLock { ($0.machine.admitted, $0.machine.forwarded, $0.machine.lost) }
    }

    /// The machine as it is now, for tests.
    @_spi(AsyncMailRelay) public var machine: TapGateMachine {
        state.withLock { $0.machine }
    }

    /// The relay runs: flushes and reservations are taken from now on.
    @_spi(AsyncMailRelay) public func open() {
        state.withLock { $0.machine.open() }
    }

    /// The relay stopped: every flush still waiting is returned, to be told so, and every
    /// waiting post goes on.
    @_spi(AsyncMailRelay) public func close() -> [FlushTicket] {
        let (flushes, resuming) = state.withLock { state in
            let (flushes, released) = state.machine.close()
            return (flushes, state.resolve(released, granted: false))
        }
        Self.resume(resuming)
        return flushes
    }

    /// Waits, at most `limit`, until the relay has room for one more post, and reserves it; nil
    /// when the wait ended without room (the deadline passed, the caller was cancelled, the
    /// relay stopped), and then the post is refused and counted if there is still none.
    @_spi(AsyncMailRelay) public func reserve(waitingAtMost limit: Duration) async -> Reservation? {
        let waiter: TapGateMachine.Waiter
        switch state.withLock({ $0.machine.reserve() }) {
        case .reserved: return Reservation(gate: ObjectIdentifier(self))
        case .notRunning: return nil
        case .wait(let number): waiter = number
        }
        /// How each of the two children ends.
        enum Waited: Sendable {
            /// The gate resolved the wait: granted room, or not.
            case resolved(granted: Bool)
            /// The deadline passed, or the caller was cancelled.
            case deadline
        }
        let granted = await withTaskGroup(of: Waited.self) { group in
            group.addTask {
                let granted = await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                        let outcome = self.state.withLock { state -> Bool? in
                            if let outcome = state.early.removeValue(forKey: waiter) { return outcome }
                            state.continuations[waiter] = continuation
                            return nil
                        }
                        if let outcome { continuation.resume(returning: outcome) }
                    }
                } onCancel: {
                    self.giveUp(waiter)
                }
                return .resolved(granted: granted)
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return .deadline
            }
            // The deadline stops the wait; the waiting child then ends once the gate resolved it:
            // granted meanwhile, or given up.
            var granted = false
            while let waited = await group.next() {
                switch waited {
                case .resolved(let outcome):
                    granted = outcome
                    group.cancelAll()
                case .deadline:
                    giveUp(waiter)
                }
            }
            return granted
        }
        return granted ? Reservation(gate: ObjectIdentifier(self)) : nil
    }

    /// A waiting post stops waiting: resolved as not granted, unless it was granted meanwhile.
    private func giveUp(_ waiter: TapGateMachine.Waiter) {
        let resuming = state.withLock { state in
            let (wasWaiting, granted) = state.machine.withdraw(waiter)
            return state.resolve(wasWaiting ? [waiter] : [], granted: false) + state.resolve(granted, granted: true)
        }
        Self.resume(resuming)
    }

    /// The post `reservation` was made for is done: room it did not spend goes back.
    @_spi(AsyncMailRelay) public func settle(_ reservation: Reservation) {
        guard !reservation.isSpent.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.resume(
            state.withLock { state in
                let granted = state.machine.release()
                return state.resolve(granted, granted: true)
            }
        )
    }

    /// Whether to hand this mail to the relay. Called at post time; runs no user code.
    ///
    /// A post that holds this gate's reservation (see ``reservations``) is admitted whole; any
    /// other only while the relay holds fewer mails than its limit. A `routed` post is refused
    /// without being counted once a graceful shutdown began (see ``TapGateMachine``).
    @_spi(AsyncMailRelay) public func admit(endingPost: Bool, routed: Bool = false) -> Bool {
        state.withLock { state in
            var reservation = false
            if state.machine.startsPost, state.machine.reserved > 0 {
                let gate = ObjectIdentifier(self)
                if let held = Self.reservations.first(where: { $0.gate == gate }) {
                    reservation = !held.isSpent.exchange(true, ordering: .acquiringAndReleasing)
                }
            }
            return state.machine.admit(endingPost: endingPost, routed: routed, reservation: reservation)
        }
    }

    /// A post was just refused: whether to wake the forwarding loop to report it (see
    /// ``TapGateMachine/needsWakeForRefusals()``).
    @_spi(AsyncMailRelay) public func needsWakeForRefusals() -> Bool {
        state.withLock { $0.machine.needsWakeForRefusals() }
    }

    /// The forwarding loop, woken, takes the posts refused since it last did.
    @_spi(AsyncMailRelay) public func takeRefusedPosts() -> Int {
        state.withLock { $0.machine.takeRefusedPosts() }
    }

    /// The forwarding loop handled one more mail.
    @_spi(AsyncMailRelay) public func forwardedOne() -> TapGateMachine.Progress {
        let (progress, resuming) = state.withLock { state in
            let progress = state.machine.forwardedOne()
            return (progress, state.resolve(progress.granted, granted: true))
        }
        Self.resume(resuming)
        return progress
    }

    /// The forwarding loop put `mails` into the outbound queue.
    @_spi(AsyncMailRelay) public func enqueued(_ mails: Int) {
        state.withLock { $0.machine.enqueued(mails) }
    }

    /// The publisher took `mails` out of the outbound queue.
    @_spi(AsyncMailRelay) public func taken(_ mails: Int) {
        guard mails > 0 else { return }
        Self.resume(
            state.withLock { state in
                let granted = state.machine.taken(mails)
                return state.resolve(granted, granted: true)
            }
        )
    }

    /// Counts mails the relay gave up on after admitting them.
    @_spi(AsyncMailRelay) public func lose(_ mails: Int) {
        state.withLock { $0.machine.lose(mails) }
    }

    /// A graceful shutdown: forwarding stops once everything admitted so far is forwarded.
    /// Returns true when it is already.
    @_spi(AsyncMailRelay) public func beginShutdown() -> Bool {
        let (isDone, resuming) = state.withLock { state in
            let (isDone, released) = state.machine.beginShutdown()
            return (isDone, state.resolve(released, granted: false))
        }
        Self.resume(resuming)
        return isDone
    }

    /// A flush: returns `.queueNow` when everything admitted so far is forwarded already,
    /// `.waiting` when the forwarding loop will queue its marker, or `.notRunning`.
    @_spi(AsyncMailRelay) public func register(
        _ ticket: FlushTicket
    ) -> (TapGateMachine.Registration, lostBefore: Int) {
        state.withLock { $0.machine.register(ticket) }
    }

    /// A flush is done: how many mails were lost since `lostBefore`, and the new baseline.
    @_spi(AsyncMailRelay) public func settleFlush(since lostBefore: Int) -> Int {
        state.withLock { $0.machine.settleFlush(since: lostBefore) }
    }

    /// Resumes waiting posts, after the lock is released.
    private static func resume(_ resuming: [(CheckedContinuation<Bool, Never>, Bool)]) {
        for (continuation, granted) in resuming { continuation.resume(returning: granted) }
    }
}
