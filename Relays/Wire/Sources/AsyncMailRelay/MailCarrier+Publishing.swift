@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

extension MailCarrier {
    /// The publish loop every engine runs, one ``PublisherMachine``: takes everything queued,
    /// writes it, and after a failure reports it (`RelayEvent.publishFailed(reason:mails:)`),
    /// counts what `policy` gives up, and backs off. Returns once the queue is closed and empty,
    /// or when cancelled during a backoff, telling the flushes of the batch it kept that the
    /// relay stopped.
    ///
    /// - Parameters:
    ///   - policy: what a failed batch becomes: written again (a durable store), or given up.
    ///   - backoff: waits before the attempt it is given the number of; false when cancelled.
    ///   - prepare: numbers a batch, once: every attempt at it writes what this returned.
    ///   - write: writes a prepared batch, and counts it; `isRetry` when the last attempt failed.
    ///   - failed: after a failed write (closes the connection, say); returns the reason to report.
    public func publish<Prepared>(
        policy: PublisherMachine.FailurePolicy,
        backoff: (_ attempt: Int) async -> Bool,
        prepare: ([OutboundQueue.Item]) -> Prepared,
        write: (_ batch: Prepared, _ isRetry: Bool) async throws -> Void,
        failed: (any Error) async -> String
    ) async {
        var machine = PublisherMachine(policy: policy)
        batches: while let items = await takeQueued() {
            machine.taken(items)
            let prepared = prepare(items)
            var isRetry = false
            while true {
                do {
                    try await write(prepared, isRetry)
                    for ticket in machine.written() { ticket.resolve(.passed) }
                    continue batches
                } catch {
                    let reason = await failed(error)
                    let failure = machine.failed()
                    if failure.lost > 0 { gate.lose(failure.lost) }  // counted before the flushes behind them return
                    reporter.report(.publishFailed(reason: reason, mails: failure.mails)) { $0.publishFailures += 1 }
                    for ticket in failure.passed { ticket.resolve(.passed) }
                    let waited = !Task.isCancelled ? await backoff(failure.backoffAttempt) : false
                    switch machine.backoffEnded(cancelled: !waited) {
                    case .writeAgain: isRetry = true
                    case .takeNext: continue batches
                    case .stop(let flushes):
                        for ticket in flushes { ticket.resolve(.notRunning) }
                        return
                    }
                }
            }
        }
        machine.queueClosed()
    }
}
