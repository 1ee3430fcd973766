import Testing

/// Thrown by ``withTimeout(_:sourceLocation:_:)``, after it has recorded an issue, when the awaited
/// operation did not finish in time.
public struct TimedOut: Error, CustomStringConvertible {
    /// How long the operation was given.
    public let limit: Duration

    /// Creates the error for an operation that was given `limit`.
    public init(limit: Duration) {
        self.limit = limit
    }

    public var description: String { "timed out after \(limit)" }
}

/// Runs `operation`, failing the test loudly if it has not finished within `limit`.
///
/// The timeout is a guard against hangs, never a way to wait: `operation` awaits the real event,
/// and a passing test never waits for the deadline. When the limit passes, it records one `Issue`
/// at the caller's `sourceLocation`, cancels `operation` and throws ``TimedOut``. It returns at
/// the limit even if `operation` ignores cancellation: a structured task group would wait for it,
/// turning a hang into a hang, where this makes a stuck test fail instead of stalling the run.
/// When the calling task is cancelled, it throws `CancellationError` at once and records nothing:
/// a cancelled wait is not a timed-out one.
///
/// To read a stream, ``_Concurrency/AsyncSequence/first(_:within:sourceLocation:)`` does this for
/// you; this is for any other event:
///
/// ```swift
/// let handled = Task { await mailroom.post(Ping(id: 1)) }
/// let receipt = try await withTimeout { await handled.value }
/// #expect(receipt == Receipt(delivered: 1))
/// ```
public func withTimeout<T: Sendable>(
    _ limit: Duration = .seconds(20),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    if let result = try await race(limit, at: sourceLocation, operation) { return result }
    Issue.record("timed out after \(limit)", sourceLocation: sourceLocation)
    throw TimedOut(limit: limit)
}
