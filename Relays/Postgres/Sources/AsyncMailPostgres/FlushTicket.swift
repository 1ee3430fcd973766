@_spi(AsyncMailInternal) import AsyncMail

/// One ``PostgresRelay/flush()`` on its way through the relay, resolved once with its outcome.
typealias FlushTicket = OneShot<FlushOutcome>

/// How a ``PostgresRelay/flush()`` ended.
enum FlushOutcome: Sendable {
    /// Everything before it was published (or, in ephemeral mode, dropped and counted lost).
    case passed
    /// The relay stopped first.
    case notRunning
    /// The flushing task was cancelled.
    case cancelled
}
