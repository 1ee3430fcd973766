import AsyncMail
import Testing

@Suite("A backlog limit ends a slow consumer instead of growing")
struct BacklogLimitTests {
    @Test("the post that finds the buffer full ends the subscription and counts it as ended")
    func overflowEnds() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 3))
        for id in 1...3 { #expect(await mailroom.post(Ping(id: id)) == Receipt(delivered: 1)) }
        #expect(await mailroom.post(Ping(id: 4)) == Receipt(ended: 1))
        // Removed before that post returned, not whenever the consumer next looks.
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.post(Ping(id: 5)) == Receipt())

        // The consumer learns why at once; the three buffered mails are discarded.
        var iterator = inbox.makeAsyncIterator()
        await #expect(throws: BacklogLimitExceeded(limit: 3)) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test("a for-try-await loop over an overflowed stream ends with the error, not an ordinary end")
    func loopSeesTheError() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 0))
        // A limit of zero holds nothing: a post finds the consumer waiting, or ends it.
        #expect(inbox.backlogLimit == 0)
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(ended: 1))
        let outcome = try await withTimeout {
            do throws(BacklogLimitExceeded) {
                for try await _ in inbox {}
                return "ended"
            } catch {
                return "\(error.limit)"
            }
        }
        #expect(outcome == "0")
    }

    @Test("a negative limit is treated as zero")
    func negativeLimit() async {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("a")), backlog: .ending(past: -5))
        #expect(inbox.backlogLimit == 0)
        #expect(await mailroom.post(Ping(id: 1), from: RoomID("a")) == Receipt(ended: 1))
    }

    @Test("a reading consumer with a limit at least the burst is never ended, and sees every mail in order")
    func burstWithinLimit() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")), backlog: .ending(past: 1_000))
        let reader = Task { try await inbox.first(1_000).map(\.id) }
        var total = Receipt()
        for id in 0..<1_000 { total += await mailroom.post(Ping(id: id), from: RoomID("lobby")) }
        #expect(total == Receipt(delivered: 1_000))
        #expect(try await withTimeout { try await reader.value } == Array(0..<1_000))
    }

    @Test("ends and drops are counted apart in one receipt")
    func endsAndDropsApart() async {
        let mailroom = Mailroom()
        let lossy = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(1))
        let bounded = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 1))
        let unbounded = await mailroom.subscribe(to: Ping.self)
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(delivered: 3))
        let second = await mailroom.post(Ping(id: 2))
        #expect(second == Receipt(delivered: 1, dropped: 1, ended: 1))
        #expect(second.matched == 3)
        #expect(second.description == "Receipt(delivered: 1, dropped: 1, ended: 1)")
        withExtendedLifetime((lossy, bounded, unbounded)) {}
    }

    @Test("a batch ends an overflowing subscription once; the rest of the batch finds it gone")
    func batchEndsOnce() async {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 2))
        let receipt = await mailroom.post(contentsOf: (1...5).map { Ping(id: $0) })
        #expect(receipt == Receipt(delivered: 2, ended: 1))
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        withExtendedLifetime(inbox) {}
    }

    @Test("mail a filter rejects takes no slot in the backlog")
    func filteredMailTakesNoSlot() async throws {
        let mailroom = Mailroom()
        let evens = await mailroom.subscribe(
            to: Ping.self,
            backlog: .ending(past: 2),
            where: { $0.id.isMultiple(of: 2) }
        )
        for id in [1, 2, 3, 4, 5] { _ = await mailroom.post(Ping(id: id)) }
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        await mailroom.close()
        #expect(try await evens.collect().map(\.id) == [2, 4])
    }

    @Test("other ends are ordinary: close() delivers what is buffered, then the loop ends without an error")
    func closeIsOrdinary() async throws {
        let mailroom = Mailroom()
        let player = Player("ann")
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(player), backlog: .ending(past: 4))
        _ = await mailroom.post(Ping(id: 1), from: player)
        _ = await mailroom.post(Ping(id: 2), from: player)
        await mailroom.close()
        #expect(try await inbox.collect().map(\.id) == [1, 2])
    }

    @Test("cancelling the consumer removes the subscription, without an error")
    func cancellingRemoves() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 8))
        let (started, ready) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var iterator = inbox.makeAsyncIterator()
            ready.yield()
            return try await iterator.next()
        }
        _ = try await started.first(1)
        consumer.cancel()
        #expect(try await withTimeout { try await consumer.value } == nil)
        try await withTimeout {
            while await mailroom.subscriberCount(Ping.self) != 0 { await Task.yield() }
        }
    }

    @Test("startingWithLatest replays into a bounded stream")
    func replay() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        _ = await mailroom.post(Ping(id: 7))
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 1), startingWithLatest: true)
        // The replayed mail fills the one slot: the next post ends it.
        #expect(await mailroom.post(Ping(id: 8)) == Receipt(ended: 1))
        withExtendedLifetime(inbox) {}
    }
}
