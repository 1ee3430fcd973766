import Synchronization

/// How far an ``Observation``'s handler has got: the mails its subscription accepted, counted by
/// its filter as they are posted, against the ones its loop has finished with.
///
/// It is what ``Observation/waitUntilHandled()`` waits on: a post delivers before it returns, so
/// once a post has returned, its mail is counted here, and the wait ends when the loop has handled
/// that many (or the observation has ended, after which nothing more will be handled).
final class ObservationProgress: Sendable {
    private struct State {
        var handled = 0
        var ended = false
        var waiting: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// Incremented by the subscription's filter, on the posting thread, for each accepted mail.
    private let accepted = Atomic(0)
    private let state = Locked(State())

    init() {}

    /// Wraps the observation's filter so that every mail it accepts is counted.
    func counting<M: Sendable>(_ isIncluded: (@Sendable (M) -> Bool)?) -> @Sendable (M) -> Bool {
        { [self] mail in
            guard isIncluded?(mail) ?? true else { return false }
            accepted.add(1, ordering: .sequentiallyConsistent)
            return true
        }
    }

    /// The loop finished with `mails` accepted mails: handled one, skipped it because the
    /// observation is ending, or was told that many were lost.
    func handled(_ mails: Int) {
        let ready = state.withLock {
            state -> [CheckedContinuation<Void, Never>] in
            state.handled += mails
            return Self.takeReady(&state)
        }
        for continuation in ready { continuation.resume() }
    }

    /// The loop has ended: nothing more will be handled, so nobody waits any longer.
    func end() {
        let waiting = state.withLock { state in
            state.ended = true
            defer { state.waiting = [] }
            return state.waiting.map(\.continuation)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once the loop has handled every mail accepted before the call, or has ended.
    func waitUntilHandled() async {
        let target = accepted.load(ordering: .sequentiallyConsistent)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                guard !state.ended, state.handled < target else { return true }
                state.waiting.append((target, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The accepted and handled counts, for a failure message.
    var counts: (accepted: Int, handled: Int) {
        let handled = state.withLock { $0.handled }
        return (accepted.load(ordering: .sequentiallyConsistent), handled)
    }

    private static func takeReady(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        var ready: [CheckedContinuation<Void, Never>] = []
        state.waiting.removeAll { waiter in
            guard waiter.target <= state.handled else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }
}
