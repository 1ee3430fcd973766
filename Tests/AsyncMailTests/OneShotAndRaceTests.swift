import AsyncMailTesting
import Testing

@_spi(AsyncMailInternal) @testable import AsyncMail

@Suite("OneShot and Race, the latch and the race the products share")
struct OneShotAndRaceTests {
    @Test("the first value wins, and every waiter, before or after it, gets that value")
    func firstValueWins() async throws {
        let latch = OneShot<Int>()
        let early = (0..<8).map { _ in Task { await latch.wait() } }
        #expect(latch.value == nil)
        #expect(latch.resolve(1))
        #expect(!latch.resolve(2), "a second value is refused")
        #expect(latch.value == 1)
        for waiter in early { #expect(try await withTimeout { await waiter.value } == 1) }
        #expect(await latch.wait() == 1, "a waiter after the value returns at once")
    }

    @Test("the first operation to end wins; a loser that ignores cancellation is not waited for")
    func raceDoesNotWaitForTheLoser() async throws {
        let never = OneShot<Int>()
        let late = OneShot<Int>()
        let winner = try await withTimeout {
            try await Race<Int>.first(
                of: [{ await never.wait() }, { 7 }],
                late: { value in late.resolve(value) }
            )
        }
        #expect(winner == 7)
        never.resolve(8)  // the loser ends now, after the race
        #expect(try await withTimeout { await late.wait() } == 8, "a late result is handed to `late`")
    }

    @Test("an error from the first to end is thrown")
    func firstErrorIsThrown() async {
        struct Failed: Error {}
        let never = OneShot<Int>()
        await #expect(throws: Failed.self) {
            try await withTimeout {
                try await Race<Int>.first(of: [{ await never.wait() }, { throw Failed() }])
            }
        }
        never.resolve(0)
    }
}
