import AsyncMailTesting
import Synchronization
import Testing

@testable import AsyncMail

/// An operation that ignores cancellation: it ends only when `release()` is called.
final class Stuck: Sendable {
    private let waiting = Locked<CheckedContinuation<Void, Never>?>(nil)
    private let (started, starting) = AsyncStream.makeStream(of: Void.self)

    func run() async {
        await withCheckedContinuation { continuation in
            waiting.withLock { $0 = continuation }
            starting.yield()
        }
    }

    /// Returns once `run()` is parked.
    func waitUntilParked() async {
        for await _ in started { return }
    }

    func release() {
        waiting.withLock { $0.take() }?.resume()
    }
}

@Suite("Waiting with a limit")
struct WithTimeoutTests {
    @Test("an operation that ignores cancellation: TimedOut at the limit, one issue, and no wait for it")
    func stuckOperation() async {
        let stuck = Stuck()
        var thrown: (any Error)?
        let issues = await recordedIssues {
            do {
                try await withTimeout(.milliseconds(50)) { await stuck.run() }
            } catch {
                thrown = error
            }
        }
        #expect(issues.count == 1)
        #expect(message(issues.first) == "timed out after 0.05 seconds")
        #expect((thrown as? TimedOut)?.limit == .milliseconds(50))
        stuck.release()  // still parked: withTimeout returned without it
    }

    @Test("a cancelled caller gets CancellationError at once, records no issue, and does not wait for the operation")
    func cancelledCaller() async throws {
        let stuck = Stuck()
        let waiter = Task {
            try await withTimeout(.seconds(3600)) { await stuck.run() }
        }
        await stuck.waitUntilParked()
        waiter.cancel()
        // A hang guard far beyond the event: the waiter ends as soon as its cancellation is seen.
        let result = try await withTimeout { await waiter.result }
        #expect(throws: CancellationError.self) { try result.get() }
        stuck.release()
    }
}
