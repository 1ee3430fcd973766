@_spi(AsyncMailInternal) import AsyncMail

/// Stops some of a task group's children without cancelling the others: a child runs its work
/// through ``run(_:)``, and ``stop()`` cancels that work, in every child sharing the signal.
///
/// A task group can only cancel all its children; the relay runner must stop forwarding, then the
/// publisher, then the readers, one after another, while the rest go on.
final class StopSignal: Sendable {
    private struct State {
        var isStopped = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Guarded(State())

    init() {}

    /// Cancels the work of every ``run(_:)`` now and from now on.
    func stop() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isStopped = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `work` until it returns; cancelled when the signal stops, or when the caller is.
    func run(_ work: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await work() }
            group.addTask { await self.stopped() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once the signal stops, or the caller is cancelled.
    private func stopped() async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = state.withLock { state in
                    guard !state.isStopped, !Task.isCancelled else { return false }
                    state.waiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
