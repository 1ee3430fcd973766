import Synchronization

/// One ``PostgresRelay/flush()`` on its way through the relay, resolved once.
final class FlushTicket: Sendable {
    enum Outcome: Sendable {
        /// Everything before it was published (or, in ephemeral mode, dropped and counted lost).
        case passed
        /// The relay stopped first.
        case notRunning
        /// The flushing task was cancelled.
        case cancelled
    }

    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var outcome: Outcome?
    }

    private let state = Mutex(State())

    /// Waits for the outcome.
    func wait() async -> Outcome {
        await withCheckedContinuation { continuation in
            let outcome: Outcome? = state.withLock { state in
                if state.outcome == nil { state.continuation = continuation }
                return state.outcome
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }

    /// Resolves the ticket; only the first outcome counts.
    func resolve(_ outcome: Outcome) {
        let continuation: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }
}
