@_spi(AsyncMailInternal) import AsyncMail
import Testing

/// Races `operation` against `limit`: its result, or nil when the limit passes first.
///
/// The operation is cancelled at the limit, but not waited for: an operation that ignores
/// cancellation must not turn a failing test into a hanging one. A passing test never waits for
/// the limit: the clock's task is cancelled as soon as the operation returns. An operation that
/// ends in time at a `sourceLocation` is written to the ``WaitLog``, with how long it took (a
/// window meant to run out has none).
func race<T: Sendable>(
    _ limit: Duration,
    at sourceLocation: SourceLocation?,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T? {
    let started = ContinuousClock.now
    let outcome = try await Race<T?>.first(of: [
        { try await operation() },
        {
            try await Task.sleep(for: limit)
            return nil
        },
    ])
    if outcome != nil, let sourceLocation {
        WaitLog.record(sourceLocation, limit: limit, took: .now - started)
    }
    return outcome
}
