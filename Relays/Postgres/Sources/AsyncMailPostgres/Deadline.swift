import Synchronization

/// Runs operations that may never end, and stops waiting for them: at a deadline, or when the
/// first of several ends.
///
/// A task group cannot do this: it waits for every child, and a postgres-nio call in flight when
/// the server terminates its connection can stay suspended for good, even after the connection
/// is closed (the chat example's database-restart test caught a publisher, and then a listener,
/// parked there). So each operation runs in a task of its own; once the caller has its answer,
/// or is cancelled, it goes on, and the tasks still running are cancelled and left to end when
/// they can.
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

/// Operations side by side: whichever ends first resumes the caller, once.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var isFinished = false
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    static func first(
        of operations: [@Sendable () async throws -> T],
        cancellable: Bool,
        late: @escaping @Sendable (T) async -> Void
    ) async throws -> T {
        let race = Race()
        guard cancellable else {
            return try await withCheckedThrowingContinuation { race.start($0, operations, late: late) }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { race.start($0, operations, late: late) }
        } onCancel: {
            _ = race.finish(.failure(CancellationError()))
        }
    }

    private func start(
        _ continuation: CheckedContinuation<T, any Error>,
        _ operations: [@Sendable () async throws -> T],
        late: @escaping @Sendable (T) async -> Void
    ) {
        let cancelledAlready = state.withLock { state in
            if !state.isFinished { state.continuation = continuation }
            return state.isFinished
        }
        guard !cancelledAlready else {
            continuation.resume(throwing: CancellationError())
            return
        }
        let tasks = operations.map { operation in
            Task {
                do {
                    let value = try await operation()
                    if !self.finish(.success(value)) { await late(value) }
                } catch {
                    _ = self.finish(.failure(error))
                }
            }
        }
        // One may have finished already; then nothing cancels the others but this.
        let finishedAlready = state.withLock { state in
            if !state.isFinished { state.tasks = tasks }
            return state.isFinished
        }
        if finishedAlready {
            for task in tasks { task.cancel() }
        }
    }

    /// Resumes the caller with `result` unless something else did; true when this did.
    func finish(_ result: Result<T, any Error>) -> Bool {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard !state.isFinished else { return nil }
            state.isFinished = true
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = taken else { return false }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
        return true
    }
}
