@_spi(AsyncMailRelay) import RelayWire

/// What an engine writes and reads, and nothing else: the store it opens, how it appends a
/// batch, how it reads what others appended, what runs beside reading, and how it closes.
/// ``RelayRunner`` does the rest, the same for every engine: forwarding, the outbound queue, the
/// publish loop with its retries and backoff, the order of a graceful stop, and the failures.
///
/// An engine is a value its relay makes in `run()`:
///
/// ```swift
/// public func run() async throws {
///     try await RelayRunner(engine: MyEngine(relay: self)).run()
/// }
/// ```
@_spi(AsyncMailRelay) public protocol RelayEngine: Sendable {
    /// What ``open()`` returns, and every other call is given: connections, a file, sockets.
    associatedtype Store: Sendable
    /// A batch as the engine writes it, numbered once: every attempt at it writes the same.
    associatedtype Batch

    /// The relay's shared half: forwarding, the outbound queue, delivery, its reporter.
    var carrier: MailCarrier { get }
    /// The relay's presence, ended when the run stops.
    var presence: PresenceKeeper { get }
    /// What a batch whose append failed becomes: appended again (a durable store), or given up.
    var failurePolicy: PublisherMachine.FailurePolicy { get }

    /// Opens the store, once, while posts are already being forwarded. Throwing stops the run,
    /// which throws the same error; retry inside what is worth retrying.
    func open() async throws -> Store

    /// What runs on the open store until cancelled, each a child of the runner: reading what
    /// others appended, presence, heartbeats, upkeep. One that throws has given up for good: the
    /// run stops and throws its error. Each is cancelled once the outbound queue is written out.
    func readers(of store: Store) -> [@Sendable () async throws -> Void]

    /// Numbers `items` taken from the outbound queue, once.
    func prepare(_ items: [OutboundQueue.Item]) -> Batch

    /// Appends a prepared batch and counts it; `isRetry` when the last attempt at it failed.
    func append(_ batch: Batch, isRetry: Bool, to store: Store) async throws

    /// After a failed append (close the connection, say); returns the reason to report.
    func appendFailed(_ error: any Error, on store: Store) async -> String

    /// Waits before attempt `attempt` after a failure; false when cancelled.
    func backoff(attempt: Int) async -> Bool

    /// Closes the store, once the readers have stopped, removing this relay's presence first.
    /// Called whatever stopped the run, even when it was cancelled.
    func close(_ store: Store) async
}
