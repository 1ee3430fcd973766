import AsyncMailTesting
import Synchronization
import TestSupport
import Testing

@testable import AsyncMail

private struct Quote: Mail, Equatable {
    let price: Int
}

private struct Ticker: Hashable, Sendable {
    let symbol: String
}

/// How many times a feed started.
private final class Starts: Sendable {
    let count = Atomic(0)
    var value: Int { count.load(ordering: .acquiring) }
}

@Suite("Expecting demand-driven work, and history, without becoming demand")
struct ExpectingWorkTests {
    @Test("expectWork waits for the work to run or stop, and never subscribes: nothing it checks starts")
    func expectWorkIsNotDemand() async {
        let mailroom = Mailroom()
        let acme = Ticker(symbol: "ACME")
        let starts = Starts()
        let feed = Task {
            await mailroom.whileSubscribed(to: Quote.self, from: .only(acme)) {
                starts.count.add(1, ordering: .releasing)
                await untilCancelled()
            }
        }
        await mailroom.expectWork(Quote.self, from: .only(acme), running: false)
        #expect(await mailroom.subscriberCount(Quote.self, from: .only(acme)) == 0)
        let board = await mailroom.subscribe(to: Quote.self)  // hears ACME: demand for its feed
        await mailroom.expectWork(Quote.self, from: .only(acme), running: true)
        #expect(starts.value == 1)
        withExtendedLifetime(board) {}
        _ = consume board
        await mailroom.expectWork(Quote.self, from: .only(acme), running: false)
        #expect(starts.value == 1, "one start, and the check itself started nothing")
        feed.cancel()
        await feed.value
    }

    @Test("expectNoMail watches with a tap: it is not demand, so the feed it checks stays idle")
    func expectNoMailIsNotDemand() async {
        let mailroom = Mailroom()
        let acme = Ticker(symbol: "ACME")
        let starts = Starts()
        let feed = Task {
            await mailroom.whileSubscribed(to: Quote.self, from: .only(acme)) {
                starts.count.add(1, ordering: .releasing)
                while !Task.isCancelled {
                    await mailroom.post(Quote(price: 1), from: acme)
                    await Task.yield()
                }
            }
        }
        await mailroom.expectNoMail(Quote.self, from: .only(acme)) {
            #expect(await mailroom.subscriberCount(Quote.self, from: .only(acme)) == 0, "not counted")
            await mailroom.post(Quote(price: 2), from: Ticker(symbol: "INIT"))  // another room's
        }
        await mailroom.expectNoMail(Quote.self, fromAny: Ticker.self) {
            #expect(await mailroom.subscriberCount(Quote.self, fromAny: Ticker.self) == 0, "not counted")
        }
        await mailroom.expectWork(Quote.self, from: .only(acme), running: false)
        #expect(starts.value == 0)
        feed.cancel()
        await feed.value
    }

    @Test("expectNoMail still catches mail from its senders, and only theirs")
    func expectNoMailStillCatches() async {
        let mailroom = Mailroom()
        let acme = Ticker(symbol: "ACME")
        let issues = await recordedIssues {
            await mailroom.expectNoMail(Quote.self, from: .only(acme)) {
                await mailroom.post(Quote(price: 7), from: acme)
                await mailroom.post(Quote(price: 8), from: Ticker(symbol: "INIT"))
            }
        }
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("expected no Quote from only Ticker(symbol: \"ACME\"); 1 arrived"))
        #expect(message(issues.first).contains("price: 7") && !message(issues.first).contains("price: 8"))
        let byType = await recordedIssues {
            await mailroom.expectNoMail(Quote.self, fromAny: Ticker.self) {
                await mailroom.post(Quote(price: 9))  // no sender: not a ticker's
                await mailroom.post(Quote(price: 10), from: acme)
            }
        }
        #expect(byType.count == 1 && message(byType.first).contains("price: 10"))
    }

    @Test("expectWork that does not hold: one issue, saying what was expected")
    func expectWorkFails() async {
        let mailroom = Mailroom()
        let issues = await recordedIssues {
            await mailroom.expectWork(Quote.self, running: true, within: .milliseconds(50))
        }
        #expect(issues.count == 1)
        #expect(
            message(issues.first).contains(
                "expected the work of whileSubscribed(to: Quote, from: everyone) to be running within 0.05 seconds"
            )
        )
    }

    @Test("expectMail after a position: the kept mail after it, then what the action posts, with positions")
    func expectMailAfterAPosition() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Quote.self, count: 2)
        let acme = Ticker(symbol: "ACME")
        let first = try await mailroom.expectMail(Quote.self, from: .only(acme), after: nil) {
            await mailroom.post(Quote(price: 1), from: acme)
        }
        let lastSeen = try #require(first.first).position
        await mailroom.post(Quote(price: 2), from: acme)  // while away
        let resumed = try await mailroom.expectMail(Quote.self, count: 2, from: .only(acme), after: lastSeen) {
            await mailroom.post(Quote(price: 3), from: acme)
        }
        #expect(resumed.map(\.mail.price) == [2, 3])
        #expect(resumed.map(\.position.sequence) == [2, 3])

        // Too old: two more posts push price 2 out of a history of two; the gap is the issue.
        await mailroom.post(Quote(price: 4), from: acme)
        let issues = await recordedIssues {
            _ = try? await mailroom.expectMail(Quote.self, count: 2, from: .only(acme), after: lastSeen) {}
        }
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("no longer reaches the position"))
        #expect(message(issues.first).contains("1 mail after the position is no longer kept"))

        await #expect(throws: PositionError.self) {
            try await mailroom.expectMail(Quote.self, from: .only(Ticker(symbol: "INIT")), after: lastSeen) {}
        }
    }

    @Test("expectMail from every sender of a type after a position: senders and the type's positions")
    func expectMailFromAnyAfterAPosition() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Quote.self, count: 10)
        await mailroom.post(Quote(price: 1), from: Ticker(symbol: "ACME"))
        let resumed = try await mailroom.expectMail(Quote.self, count: 2, fromAny: Ticker.self, after: .oldestKept) {
            await mailroom.post(Quote(price: 2), from: Ticker(symbol: "INIT"))
        }
        #expect(resumed.map(\.mail.sender.symbol) == ["ACME", "INIT"])
        #expect(resumed.map(\.position.sequence) == [1, 2], "the type's positions: one order across rooms")
    }

    @Test("expectMail from every sender of a type with a predicate: the first match, with its sender")
    func expectMatchFromAny() async {
        let mailroom = Mailroom()
        let high = await mailroom.expectMail(Quote.self, fromAny: Ticker.self) {
            await mailroom.post(Quote(price: 1), from: Ticker(symbol: "ACME"))
            await mailroom.post(Quote(price: 99))  // no sender: not a ticker's
            await mailroom.post(Quote(price: 50), from: Ticker(symbol: "INIT"))
        } where: {
            $0.price > 10
        }
        #expect(high?.sender.symbol == "INIT" && high?.mail.price == 50)
        let issues = await recordedIssues {
            await mailroom.expectMail(Quote.self, fromAny: Ticker.self, within: .milliseconds(50)) {
                await mailroom.post(Quote(price: 2), from: Ticker(symbol: "ACME"))
            } where: {
                $0.price > 10
            }
        }
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("expected one Quote from any Ticker that matches the predicate"))
    }
}
