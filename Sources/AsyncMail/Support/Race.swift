/// Operations side by side: whichever ends first resumes the caller, and the others are cancelled
/// but not waited for.
///
/// A task group cannot do this: it waits for every child, and an operation that ignores
/// cancellation (a postgres-nio call whose connection the server dropped, a test's stuck consumer)
/// would hold the caller for good. So each operation runs in a task of its own; once the caller has
/// its answer, or is cancelled, it goes on, and the tasks still running end when they can.
///
/// Written once for AsyncMail's own products (the testing helpers' deadlines, the relay's
/// connection deadlines); not part of the public API.
@_spi(AsyncMailInternal)
public final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var isFinished = false
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    private init() {}

    /// Runs `operations` side by side and returns (or throws) as the first to end did.
    ///
    /// - Parameters:
    ///   - cancellable: Whether the caller's cancellation ends the wait with `CancellationError`;
    ///     false for work whose outcome must be known, which is then awaited.
    ///   - late: Receives a result that arrives after another operation ended the race, to
    ///     release it (a connection that opened too late is closed, not leaked).
    public static func first(
        of operations: [@Sendable () async throws -> T],
        cancellable: Bool = true,
        late: @escaping @Sendable (T) async -> Void = { _ in }
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
    private func finish(_ result: sending Result<T, any Error>) -> Bool {
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
