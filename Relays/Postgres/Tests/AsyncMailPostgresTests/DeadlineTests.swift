@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Synchronization
import Testing

@testable import AsyncMailPostgres

/// `Deadline` must give up on an operation that ignores cancellation: a task group would wait for it.
@Suite("Deadline")
struct DeadlineTests {
    @Test("an operation that never ends and ignores cancellation is given up at the deadline")
    func givesUp() async throws {
        let gate = Gate()
        let result: Void? = try await withTimeout(.seconds(10)) {
            try await Deadline.run(.milliseconds(50)) { await gate.wait() }
        }
        #expect(result == nil)
        gate.open()
    }

    @Test("a result that arrives after the deadline is handed over to be released")
    func lateResultIsReleased() async throws {
        let gate = Gate()
        let (released, release) = AsyncStream.makeStream(of: Int.self)
        let result = try await Deadline.run(.milliseconds(50)) {
            await gate.wait()
            return 7
        } late: { value in
            release.yield(value)
        }
        #expect(result == nil)
        gate.open()
        #expect(try await first(1, of: released) == [7])
    }

    @Test("the caller's cancellation ends the wait at once; an uncancellable wait runs to its deadline")
    func cancellation() async throws {
        let gate = Gate()
        let waiting = Task { try await Deadline.run(.seconds(60)) { await gate.wait() } }
        waiting.cancel()
        await #expect(throws: CancellationError.self) {
            try await withTimeout(.seconds(10)) { _ = try await waiting.value }
        }
        let uncancellable = Task { try await Deadline.run(.milliseconds(50), cancellable: false) { await gate.wait() } }
        uncancellable.cancel()
        #expect(try await withTimeout(.seconds(10)) { try await uncancellable.value } == nil)
        gate.open()
    }

    @Test("a giving-up check ends the wait with its error, though the operation never ends")
    func givingUp() async throws {
        let gate = Gate()
        let isLost = Atomic(false)
        let waiting = Task {
            try await Deadline.run(.seconds(600), givingUp: { isLost.load(ordering: .relaxed) ? Refused() : nil }) {
                await gate.wait()
            }
        }
        isLost.store(true, ordering: .relaxed)
        await #expect(throws: Refused.self) {
            try await withTimeout { _ = try await waiting.value }
        }
        gate.open()
    }

    @Test("a result and an error in time are passed through")
    func inTime() async throws {
        #expect(try await Deadline.run(.seconds(10)) { 42 } == 42)
        await #expect(throws: Refused.self) {
            _ = try await Deadline.run(.seconds(10)) { () async throws -> Int in throw Refused() }
        }
    }
}

private struct Refused: Error {}

/// Suspends its waiters, ignoring cancellation, until opened.
private final class Gate: Sendable {
    private let state = Guarded<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
