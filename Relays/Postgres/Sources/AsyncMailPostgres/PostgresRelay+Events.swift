import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay

extension PostgresRelay {
    /// The relay's events from now on, newest kept when the consumer falls 1,000 behind.
    ///
    /// Each call makes its own stream; it ends when the relay's ``run()`` returns or the stream
    /// is dropped.
    public func events() -> AsyncStream<RelayEvent> {
        reporter.events()
    }

    /// What this relay has done so far.
    public var counters: RelayCounters { reporter.counters }

    /// Counts, logs and broadcasts an event (see `RelayReporter`).
    func report(_ event: RelayEvent, counting: (inout RelayCounters) -> Void) {
        reporter.report(event, counting: counting)
    }

    /// Changes counters that no event reports.
    func count(_ counting: (inout RelayCounters) -> Void) {
        reporter.count(counting)
    }

    /// What went wrong, in words an operator can act on: postgres-nio's plain description of an
    /// error is the same generic sentence for every failure, its reflection has the server's
    /// message and code (with bound values still redacted).
    static func reason(_ error: any Error) -> String {
        String(reflecting: error)
    }
}
