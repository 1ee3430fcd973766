@_spi(AsyncMailInternal) import AsyncMail

/// Runs operations that may never end, and stops waiting for them: at a deadline, or when the
/// first of several ends.
///
/// A task group cannot do this: it waits for every child, and a postgres-nio call in flight when
/// the server terminates its connection can stay suspended for good, even after the connection
/// is closed (the chat example's database-restart test caught a publisher, and then a listener,
/// parked there). So it runs on the core's `Race`, which gives each operation a task of its own
/// and leaves the ones still running, cancelled, to end when they can.
enum Deadline {
    /// How often a wait with a `givingUp` check checks it.
    static let checkInterval = Duration.milliseconds(100)

    /// The operation's result, or nil when `limit` passed first.
    ///
    /// - Parameters:
    ///   - cancellable: Whether the caller's cancellation ends the wait; not for work that must
    ///     still be tried when cancelled, such as closing a connection.
    ///   - givingUp: Checked every ``checkInterval`` while waiting; an error it returns ends the
    ///     wait with that error. For a cause that makes an answer impossible but does not end the
    ///     operation, such as a connection found closed under a call that stays suspended.
    ///   - late: Receives a result that arrives after the deadline, to release it (a connection
    ///     that opened too late is closed, not leaked).
    /// - Throws: The operation's error, `givingUp`'s, or `CancellationError` when a cancellable
    ///   caller is cancelled.
    static func run<T: Sendable>(
        _ limit: Duration,
        cancellable: Bool = true,
        givingUp: (@Sendable () -> (any Error)?)? = nil,
        _ operation: @escaping @Sendable () async throws -> T,
        late: @escaping @Sendable (T) async -> Void = { _ in }
    ) async throws -> T? {
        try await Race<T?>.first(
            of: [
                { try await operation() },
                {
                    let end = ContinuousClock.now + limit
                    while ContinuousClock.now < end {
                        let left = end - .now
                        try await Task.sleep(for: givingUp == nil ? left : min(left, checkInterval))
                        if let reason = givingUp?() { throw reason }
                    }
                    return nil
                },
            ],
            cancellable: cancellable,
            late: { value in if let value { await late(value) } }
        )
    }

    /// Runs `operations` side by side until the first one ends, returning or throwing as it did.
    static func firstToEnd(_ operations: [@Sendable () async throws -> Void]) async throws {
        try await Race<Void>.first(of: operations, cancellable: true, late: { _ in })
    }
}
