@_spi(AsyncMailInternal) import AsyncMail

/// One a relay's `flush()` on its way through the relay, resolved once with its outcome.
@_spi(AsyncMailRelay) public typealias FlushTicket = OneShot<FlushOutcome>

/// How a a relay's `flush()` ended.
@_spi(AsyncMailRelay) public enum FlushOutcome: Sendable {
    /// Everything before it was published (or, in ephemeral mode, dropped and counted lost).
    case passed
    /// The relay stopped first.
    case notRunning
    /// The flushing task was cancelled.
    case cancelled
}
