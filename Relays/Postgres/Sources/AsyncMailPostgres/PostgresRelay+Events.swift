@_spi(AsyncMailInternal) import AsyncMail
import Logging

extension PostgresRelay {
    /// The relay's events from now on, newest kept when the consumer falls 1,000 behind.
    ///
    /// Each call makes its own stream; it ends when the relay's ``run()`` returns or the stream
    /// is dropped.
    public func events() -> AsyncStream<RelayEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: RelayEvent.self,
            bufferingPolicy: .bufferingNewest(1_000)
        )
        let key = state.withLock { state in
            defer { state.nextListener += 1 }
            state.listeners[state.nextListener] = continuation
            return state.nextListener
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: key) }
        }
        return stream
    }

    /// Counts, logs and broadcasts an event.
    ///
    /// Every event is counted and broadcast; log lines are throttled per kind of event (see
    /// ``LogThrottle``).
    func report(_ event: RelayEvent, counting: (inout RelayCounters) -> Void) {
        let now = ContinuousClock.now
        let (listeners, leftOut, before, after) = state.withLock { state in
            let before = state.counters
            counting(&state.counters)
            return (
                Array(state.listeners.values), state.logThrottle.admit(event.code, at: now), before, state.counters
            )
        }
        metrics.add(from: before, to: after)
        if let leftOut {
            let also = leftOut > 0 ? " (and \(leftOut) more like it not logged)" : ""
            switch event.code.base {
            case .listening: logger.info("relay listening\(also)")
            case .gap, .oversize, .unknownType, .decodeFailed, .queueOverflow, .rejected, .expired, .presenceExpired:
                logger.warning("relay: \(event)\(also)")
            case .disconnected, .publishFailed: logger.error("relay: \(event)\(also)")
            }
        }
        for listener in listeners { listener.yield(event) }
    }

    /// What went wrong, in words an operator can act on: postgres-nio's plain description of an
    /// error is the same generic sentence for every failure, its reflection has the server's
    /// message and code (with bound values still redacted).
    /// Changes counters that no event reports; the one other way they change, so that the
    /// metrics follow every change.
    func count(_ counting: (inout RelayCounters) -> Void) {
        let (before, after) = state.withLock { state in
            let before = state.counters
            counting(&state.counters)
            return (before, state.counters)
        }
        metrics.add(from: before, to: after)
    }

    static func reason(_ error: any Error) -> String {
        String(reflecting: error)
    }

    func finishEvents() {
        let listeners = state.withLock { state in
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }
}
