import AsyncMailTesting
import Testing

@testable import AsyncMail

/// The heavy tests' hang guard (`Support.swift`), which counts from a test's turn: a guard that
/// could not fire would hide a hang until CI's outer `timeout` ends the whole run.
@Suite("Test support: a heavy test's limit")
struct HeavyTurnsTests {
    private struct Failure: Error {}

    @Test("a test past its limit fails, and is cancelled")
    func pastTheLimit() async throws {
        let cancelled = Locked(false)
        try await withTimeout {
            await withKnownIssue("the limit records an issue") {
                try await HeavyTurns.run(
                    {
                        do {
                            try await Task.sleep(for: .seconds(600))  // a hang, as far as the limit knows
                        } catch {
                            cancelled.withLock { $0 = true }
                            throw error
                        }
                    },
                    within: .milliseconds(50),
                    reportingAt: #_sourceLocation
                )
            }
        }
        #expect(cancelled.withLock { $0 })
    }

    @Test("a test within its limit passes, and what it throws is thrown as it is")
    func withinTheLimit() async throws {
        try await HeavyTurns.run({}, within: .seconds(60), reportingAt: #_sourceLocation)
        await #expect(throws: Failure.self) {
            try await HeavyTurns.run({ throw Failure() }, within: .seconds(60), reportingAt: #_sourceLocation)
        }
    }
}
