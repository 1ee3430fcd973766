@_spi(AsyncMailInternal) import AsyncMail
import Logging
@_spi(AsyncMailRelay) import RelayWire

/// A relay's counters and events, whatever its engine: every change to ``RelayCounters`` goes
/// through here, so that its events, its log lines and its metrics follow every change.
@_spi(AsyncMailRelay)
public final class RelayReporter: Sendable {
    private struct State {
        var counters = RelayCounters()
        var listeners: [UInt64: AsyncStream<RelayEvent>.Continuation] = [:]
        var nextListener: UInt64 = 0
        var logThrottle = LogThrottle()
    }

    private let state = Guarded(State())
    /// ``RelayCounters``, publish durations and receive lags as swift-metrics metrics.
    public let metrics: RelayMetrics
    public let logger: Logger

    public init(metrics: RelayMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    /// What the relay has done so far.
    public var counters: RelayCounters { state.withLock { $0.counters } }

    /// The relay's events from now on, newest kept when the consumer falls 1,000 behind; each
    /// call makes its own stream, which ends at the next ``finish()`` or when it is dropped.
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
    public func report(_ event: RelayEvent, counting: (inout RelayCounters) -> Void) {
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

    /// Changes counters that no event reports; the one other way they change, so that the
    /// metrics follow every change.
    public func count(_ counting: (inout RelayCounters) -> Void) {
        let (before, after) = state.withLock { state in
            let before = state.counters
            counting(&state.counters)
            return (before, state.counters)
        }
        metrics.add(from: before, to: after)
    }

    /// Reports and counts one of the receiver's notes.
    public func report(_ note: InboundReceiver.Note) {
        switch note {
        case .gap(let origin, let missing):
            report(.gap(origin: origin, missing: missing)) { $0.missing.addSaturating(missing) }
        case .duplicate(let mails):
            count { $0.duplicates.addSaturating(mails) }
        case .unknownType(let name, let mails):
            report(.unknownType(name)) { $0.unknownType.addSaturating(mails) }
        case .decodeFailed(let type, let reason, let mails):
            report(.decodeFailed(type: type, reason: reason)) { $0.decodeFailures.addSaturating(mails) }
        case .rejected(let reason):
            report(.rejected(reason: reason)) { $0.rejected.addSaturating(1) }
        }
    }

    /// Ends every events stream made so far: the relay stopped.
    public func finish() {
        let listeners = state.withLock { state in
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }
}
