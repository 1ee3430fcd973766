/// The publisher's life, as a value: every engine's publish loop (``OutboundQueue`` to its
/// store) is this machine and the effects it names, so retry, backoff and loss are decided once.
///
/// `idle` → a batch is taken → `sending(retry: false)` → written: `idle` again; failed:
/// `backingOff`, then `sending(retry: true)` with the same batch (``FailurePolicy/retry``, a
/// durable store, which numbered it once) or `idle` with the batch given up and counted
/// (``FailurePolicy/drop``, an ephemeral one). Each failure since the last write waits longer. A backoff cut short by
/// cancellation, or the queue closed and empty, ends in `closed`. No threads, no I/O: its
/// transitions are tested as values; the loop that runs it is `MailCarrier.publish`.
@_spi(AsyncMailRelay) public struct PublisherMachine: Sendable {
    /// What a failed batch becomes.
    @_spi(AsyncMailRelay) public enum FailurePolicy: Sendable {
        /// Written again, as it was, after the backoff: nothing is lost while the store is away.
        case retry
        /// Given up and counted lost at once; the publisher goes on with the next batch.
        case drop
    }

    @_spi(AsyncMailRelay) public enum State: Sendable, Equatable {
        case idle
        /// Writing a batch; `retry` when it is the one the last attempt failed to write.
        case sending(retry: Bool)
        case backingOff
        case closed
    }

    /// What to do after a batch failed.
    @_spi(AsyncMailRelay) public struct Failure: Sendable {
        /// The batch's mails, for the report.
        @_spi(AsyncMailRelay) public var mails: Int
        /// Mails given up (``FailurePolicy/drop``): count them lost before the flushes return.
        @_spi(AsyncMailRelay) public var lost: Int
        /// Flushes behind the given-up batch: it is settled, so they return.
        @_spi(AsyncMailRelay) public var passed: [FlushTicket]
        /// Failures since the last write: the backoff's attempt number.
        @_spi(AsyncMailRelay) public var backoffAttempt: Int
    }

    /// What to do once a backoff ended.
    @_spi(AsyncMailRelay) public enum AfterBackoff: Sendable {
        /// Write the batch kept from the failed attempt again.
        case writeAgain([OutboundQueue.Item])
        /// Nothing is kept: take the next batch.
        case takeNext
        /// Cancelled: stop, telling the kept batch's flushes the relay stopped.
        case stop(notRunning: [FlushTicket])
    }

    @_spi(AsyncMailRelay) public private(set) var state = State.idle
    @_spi(AsyncMailRelay) public let policy: FailurePolicy
    /// The batch being written, kept across attempts.
    private var batch: [OutboundQueue.Item] = []
    /// Failures since the last batch written.
    private var failures = 0

    @_spi(AsyncMailRelay) public init(policy: FailurePolicy) {
        self.policy = policy
    }

    /// A batch was taken from the queue: write it.
    @_spi(AsyncMailRelay) public mutating func taken(_ items: [OutboundQueue.Item]) {
        batch = items
        state = .sending(retry: false)
    }

    /// The batch was written: the flushes among it return.
    @_spi(AsyncMailRelay) public mutating func written() -> [FlushTicket] {
        defer {
            batch = []
            failures = 0
            state = .idle
        }
        return Self.flushes(in: batch)
    }

    /// The batch failed: report it, then back off.
    @_spi(AsyncMailRelay) public mutating func failed() -> Failure {
        failures += 1
        state = .backingOff
        let mails = OutboundQueue.mailCount(of: batch)
        switch policy {
        case .retry:
            return Failure(mails: mails, lost: 0, passed: [], backoffAttempt: failures)
        case .drop:
            defer { batch = [] }
            return Failure(mails: mails, lost: mails, passed: Self.flushes(in: batch), backoffAttempt: failures)
        }
    }

    /// The backoff ended, or was cut short by cancellation.
    @_spi(AsyncMailRelay) public mutating func backoffEnded(cancelled: Bool) -> AfterBackoff {
        guard state == .backingOff else { return .takeNext }
        if cancelled {
            state = .closed
            defer { batch = [] }
            return .stop(notRunning: Self.flushes(in: batch))
        }
        guard !batch.isEmpty else {
            state = .idle
            return .takeNext
        }
        state = .sending(retry: true)
        return .writeAgain(batch)
    }

    /// The queue is closed and empty.
    @_spi(AsyncMailRelay) public mutating func queueClosed() {
        state = .closed
    }

    private static func flushes(in items: [OutboundQueue.Item]) -> [FlushTicket] {
        items.compactMap { item in
            if case .flush(let ticket) = item { ticket } else { nil }
        }
    }
}
