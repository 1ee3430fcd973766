import Synchronization

/// Runs an operation that may never end, and stops waiting for it at a deadline.
///
/// A task group cannot do this: it waits for every child, and a postgres-nio query in flight
/// when the server terminates its connection can stay suspended for good, even after the
/// connection is closed (the chat example's database-restart test caught a publisher parked
/// there). So the operation runs in a task of its own; at the deadline, or when the caller is
/// cancelled, the caller goes on and that task is cancelled and left to end when it can.
enum Deadline {
    /// The operation's result, or nil when `limit` passed first.
    ///
    /// - Parameters:
    ///   - late: Receives a result that arrives after the deadline, to release it (a connection
    ///     that opened too late is closed, not leaked).
    ///   - cancellable: Whether the caller's cancellation ends the wait; not for work that must
    ///     still be tried when cancelled, such as closing a connection.
    /// - Throws: The operation's error, or `CancellationError` when a cancellable caller is cancelled.
    static func run<T: Sendable>(
        _ limit: Duration,
        cancellable: Bool = true,
        _ operation: @escaping @Sendable () async throws -> T,
        late: @escaping @Sendable (T) async -> Void = { _ in }
    ) async throws -> T? {
        let race = Race<T>()
        guard cancellable else {
            return try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, limit: limit, operation, late: late)
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, limit: limit, operation, late: late)
            }
        } onCancel: {
            _ = race.finish(.failure(CancellationError()))
        }
    }
}

/// The operation against the clock: whichever finishes first resumes the caller, once.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T?, any Error>?
        var isFinished = false
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    func start(
        _ continuation: CheckedContinuation<T?, any Error>,
        limit: Duration,
        _ operation: @escaping @Sendable () async throws -> T,
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
        let work = Task {
            do {
                let value = try await operation()
                if !self.finish(.success(value)) { await late(value) }
            } catch {
                _ = self.finish(.failure(error))
            }
        }
        let clock = Task {
            do { try await Task.sleep(for: limit) } catch { return }
            _ = self.finish(.success(nil))
        }
        // Either may have finished already; then nothing cancels them but this.
        let finishedAlready = state.withLock { state in
            if !state.isFinished { state.tasks = [work, clock] }
            return state.isFinished
        }
        if finishedAlready {
            work.cancel()
            clock.cancel()
        }
    }

    /// Resumes the caller with `result` unless something else did; true when this did.
    func finish(_ result: Result<T?, any Error>) -> Bool {
        let taken = state.withLock { state -> (CheckedContinuation<T?, any Error>?, [Task<Void, Never>])? in
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
