import AsyncMailTesting
import Synchronization
import TestSupport
import Testing

@testable import AsyncMail

/// Reads counts until one satisfies `done`: a coalesced stream may skip the values between.
private func awaitCount(
    from counts: AsyncStream<Int>,
    sourceLocation: SourceLocation = #_sourceLocation,
    until done: @escaping @Sendable (Int) -> Bool
) async throws {
    let reached = try await withTimeout(sourceLocation: sourceLocation) { () -> Bool in
        for await count in counts where done(count) { return true }
        return false
    }
    #expect(reached, "the counts ended first", sourceLocation: sourceLocation)
}

private struct Quote: Mail {
    let price: Int
}

private struct Ticker: Hashable, Sendable {
    let symbol: String
}

/// A sender type no quote is posted from.
private struct Desk: Hashable, Sendable {}

@Suite("The demand rule: a subscription counts for a sender if a post from that sender would reach it")
struct DemandRuleTests {
    @Test(
        "every-sender, sender-type, positioned and filtered subscriptions count for a room; others' rooms and taps do not"
    )
    func whatCountsForARoom() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Quote.self, count: 4)
        let acme = Ticker(symbol: "ACME")
        func count() async -> Int { await mailroom.subscriberCount(Quote.self, from: .only(acme)) }
        let otherRoom = await mailroom.subscribe(to: Quote.self, from: .only(Ticker(symbol: "INIT")))
        let otherSenderType = await mailroom.subscribe(to: Quote.self, fromAny: Desk.self)
        let tap = await mailroom.tap()
        #expect(await count() == 0, "another room, another sender type and a tap: no post from ACME reaches them")
        let pinned = await mailroom.subscribe(to: Quote.self, from: .only(acme)) { $0.price > 1_000 }
        #expect(await count() == 1, "its own room, filter or not")
        let everyone = await mailroom.subscribe(to: Quote.self)
        #expect(await count() == 2, "an every-sender subscription hears ACME")
        let everyTicker = await mailroom.subscribe(to: Quote.self, fromAny: Ticker.self)
        #expect(await count() == 3, "a subscription to every Ticker hears ACME")
        let positioned = try await mailroom.subscribe(to: Quote.self, after: nil)
        #expect(await count() == 4, "with positions too")
        let observation = await mailroom.observe(Quote.self, from: .only(acme), owner: mailroom) { _, _ in }
        #expect(await count() == 5, "an observation is a subscription")
        #expect(
            await mailroom.subscriberCount(Quote.self, fromAny: Ticker.self) == 1,
            "fromAny counts its own form only"
        )
        #expect(await mailroom.subscriberCount(Quote.self) == 7, "everyone: every subscription, taps never")

        // The rule is the one a post follows: the receipt names exactly the counted subscriptions.
        let receipt = await mailroom.post(Quote(price: 2_000), from: acme)
        #expect(receipt.matched == 5 && receipt.delivered == 5)
        withExtendedLifetime((otherRoom, otherSenderType, tap, pinned, everyone, everyTicker, positioned)) {}
        observation.cancel()
    }

    @Test("an every-sender subscription starts a room's whileSubscribed work, and its leaving stops it")
    func everyoneStartsARoomsWork() async throws {
        let mailroom = Mailroom()
        let acme = Ticker(symbol: "ACME")
        let (runs, run) = AsyncStream.makeStream(of: String.self)
        let feed = Task {
            await mailroom.whileSubscribed(to: Quote.self, from: .only(acme)) {
                run.yield("started")
                defer { run.yield("stopped") }
                await untilCancelled()
            }
        }
        var board: AsyncStream<Quote>? = await mailroom.subscribe(to: Quote.self)
        #expect(try await runs.first(1) == ["started"])
        board = nil
        #expect(try await runs.first(1) == ["stopped"])
        var tickers: AsyncStream<Envelope<Quote, Ticker>>? = await mailroom.subscribe(
            to: Quote.self,
            fromAny: Ticker.self
        )
        #expect(try await runs.first(1) == ["started"], "so does one to every Ticker")
        tickers = nil
        #expect(try await runs.first(1) == ["stopped"])
        feed.cancel()
        await feed.value
        withExtendedLifetime((board, tickers)) {}
    }

    @Test("stopAfter: a subscriber back within the grace finds the work still running; it started once")
    func graceHoldsThroughReconnects() async throws {
        let mailroom = Mailroom()
        let acme = Ticker(symbol: "ACME")
        let (runs, run) = AsyncStream.makeStream(of: String.self)
        let lingering = mailroom.lingeringWorkCounts(Quote.self, from: .only(acme))
        let feed = Task {
            // A grace no test outlives: it ends only by a subscriber coming back.
            await mailroom.whileSubscribed(to: Quote.self, from: .only(acme), stopAfter: .seconds(3_600)) {
                run.yield("started")
                defer { run.yield("stopped") }
                await untilCancelled()
            }
        }
        for reconnect in 1...5 {
            let client = await mailroom.subscribe(to: Quote.self, from: .only(acme))
            if reconnect == 1 { #expect(try await runs.first(1) == ["started"]) }
            try await awaitCount(from: lingering) { $0 == 0 }
            withExtendedLifetime(client) {}
            _ = consume client
            try await awaitCount(from: lingering) { $0 == 1 }  // the client left: its grace began
        }
        await mailroom.expectWork(Quote.self, from: .only(acme), running: true)
        feed.cancel()
        await feed.value
        run.finish()
        #expect(try await runs.collect() == ["stopped"], "five reconnects, one start, stopped only by the cancel")
    }

    @Test("stopAfter: with nobody back, the work stops once its grace has passed")
    func workStopsAfterTheGrace() async throws {
        let mailroom = Mailroom()
        let (runs, run) = AsyncStream.makeStream(of: String.self)
        let feed = Task {
            await mailroom.whileSubscribed(to: Quote.self, stopAfter: .milliseconds(20)) {
                run.yield("started")
                defer { run.yield("stopped") }
                await untilCancelled()
            }
        }
        var client: AsyncStream<Quote>? = await mailroom.subscribe(to: Quote.self)
        #expect(try await runs.first(1) == ["started"])
        client = nil
        #expect(try await runs.first(1) == ["stopped"])
        await mailroom.expectWork(Quote.self, running: false)
        feed.cancel()
        await feed.value
        withExtendedLifetime(client) {}
    }
}
