import AsyncMail
import AsyncMailTesting
import Synchronization
import Testing

/// An observation's owner that keeps what its handler was called with.
private final class DeliveryRecorder: Sendable {
    private let deliveries = Mutex<[Delivery<Ping>]>([])

    var recorded: [Delivery<Ping>] { deliveries.withLock { $0 } }

    func record(_ delivery: Delivery<Ping>) { deliveries.withLock { $0.append(delivery) } }
}

/// What a mail or loss stands for, for comparing: mails as their ids, losses as negative counts.
private func summary(_ deliveries: [Delivery<Ping>]) -> [Int] {
    deliveries.map { delivery in
        switch delivery {
        case .mail(let ping): ping.id
        case .lost(let loss): -loss.count
        }
    }
}

@Suite("A dropping backlog: the consumer is told what it lost, in its own loop, in order")
struct DroppingStreamTests {
    @Test("dropping the oldest: the loss, counted in the posts' receipts too, where the evicted mail stood")
    func dropOldestTellsInOrder() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .droppingOldest(past: 3))
        #expect(inbox.backlogLimit == 3)
        var receipts = Receipt()
        for id in 1...7 { receipts += await mailroom.post(Ping(id: id)) }
        #expect(receipts == Receipt(delivered: 3, dropped: 4))
        #expect(summary(try await inbox.first(4)) == [-4, 5, 6, 7])
        #expect(await mailroom.subscriberCount(Ping.self) == 1, "a loss does not end the subscription")
        await mailroom.post(Ping(id: 8))
        #expect(summary(try await inbox.first(1)) == [8])
    }

    @Test("dropping the newest: the buffered mail, then the loss, then what came after room was made")
    func dropNewestTellsInOrder() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("a")), backlog: .droppingNewest(past: 2))
        for id in 1...5 { await mailroom.post(Ping(id: id), from: RoomID("a")) }
        var iterator = inbox.makeAsyncIterator()
        #expect(await iterator.next() == .mail(Ping(id: 1)))
        await mailroom.post(Ping(id: 6), from: RoomID("a"))
        var rest: [Delivery<Ping>] = []
        for _ in 0..<3 { if let next = await iterator.next() { rest.append(next) } }
        #expect(summary(rest) == [2, -3, 6])
    }

    @Test("a loss at the back is told as soon as the consumer asks, without waiting for more mail")
    func lossAtTheBackIsToldAtOnce() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .droppingNewest(past: 1))
        await mailroom.post(contentsOf: (1...3).map { Ping(id: $0) })
        #expect(summary(try await inbox.first(2)) == [1, -2])
    }

    @Test("fromAny: and tap take the same backlog; a tap's losses are in its loop, not in receipts")
    func envelopesAndTaps() async throws {
        let mailroom = Mailroom()
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self, backlog: .droppingOldest(past: 1))
        let tap = await mailroom.tap(backlog: .droppingOldest(past: 1))
        #expect(await mailroom.post(Ping(id: 1), from: RoomID("a")) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: RoomID("b")) == Receipt(dropped: 1), "the tap is not counted")
        let heard = try await rooms.first(2)
        #expect(heard.first?.loss == MailLoss(code: .dropped, count: 1))
        #expect(heard.last?.mail?.sender == RoomID("b"))
        let tapped = try await tap.first(2)
        #expect(tapped.first?.loss?.count == 1)
        #expect(tapped.last?.mail?.mail(as: Ping.self) == Ping(id: 2))
    }

    @Test("resuming with a dropping backlog: the replay first, never dropped, then live mail and its losses")
    func resumedReplayIsNotDropped() async throws {
        let mailroom = Mailroom()
        let room = RoomID("lobby")
        await mailroom.retainHistory(Ping.self, count: 10)
        let first = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        for id in 1...5 { await mailroom.post(Ping(id: id), from: room) }
        let position = try await first.mail.first(1)[0].position
        let resumed = try await mailroom.subscribe(
            to: Ping.self,
            from: .only(room),
            after: position,
            backlog: .droppingOldest(past: 1)
        )
        #expect(resumed.gap == nil)
        await mailroom.post(Ping(id: 6), from: room)
        await mailroom.post(Ping(id: 7), from: room)
        let heard = try await resumed.mail.first(6)
        #expect(heard.map { $0.mail?.mail.id ?? -($0.loss?.count ?? 0) } == [2, 3, 4, 5, -1, 7])
        #expect(heard.last?.mail?.position.sequence == 7)
    }

    @Test("closing the mailroom: the consumer gets what is buffered, its losses included, then the end")
    func closeDrains() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .droppingNewest(past: 1))
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)])
        await mailroom.close()
        let all = try await withTimeout { await inbox.reduce(into: [Delivery<Ping>]()) { $0.append($1) } }
        #expect(summary(all) == [1, -1])
    }

    @Test("cancelling the consumer, or dropping the stream, removes the subscription")
    func cancelAndDropRemove() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .droppingOldest(past: 4))
        let consumer = Task { for await _ in inbox {} }
        try await waitUntil { await mailroom.subscriberCount(Ping.self) == 1 }
        consumer.cancel()
        await consumer.value
        try await waitUntil { await mailroom.subscriberCount(Ping.self) == 0 }
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())

        var dropped: DroppingStream<Ping>? = await mailroom.subscribe(to: Ping.self, backlog: .droppingOldest(past: 4))
        #expect(await mailroom.post(Ping(id: 2)) == Receipt(delivered: 1))
        _ = dropped
        dropped = nil
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("an observation with a dropping backlog hands its handler each loss, and waits for them as handled")
    func observationsAreTold() async throws {
        let mailroom = Mailroom()
        let owner = DeliveryRecorder()
        let (entered, enter) = AsyncStream.makeStream(of: Void.self)
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let observation = await mailroom.observe(Ping.self, owner: owner, backlog: .droppingOldest(past: 1)) {
            owner,
            delivery in
            owner.record(delivery)
            guard delivery.mail?.id == 1 else { return }
            enter.yield()
            for await _ in released { break }  // holds the loop until the test has posted the rest
        }
        await mailroom.post(Ping(id: 1))
        _ = try await entered.first(1)
        for id in 2...4 { await mailroom.post(Ping(id: id)) }  // 2 and 3 evicted, 4 kept
        release.yield()
        try await withTimeout { await observation.waitUntilHandled() }
        #expect(summary(owner.recorded) == [1, -2, 4])
    }

    @Test("serving a connection: a stuck client's losses reach it in order once it reads; its leaving ends it all")
    func serveTellsAndEnds() async throws {
        let mailroom = Mailroom()
        let room = RoomID("lobby")
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(room), backlog: .droppingOldest(past: 2))
        let (written, socket) = AsyncStream.makeStream(of: [Int].self)
        let (clientReads, letRead) = AsyncStream.makeStream(of: Void.self)
        let (clientSays, client) = AsyncStream.makeStream(of: Int.self)
        let connection = Task {
            await inbox.serve { delivery in
                var reads = clientReads.makeAsyncIterator()
                _ = await reads.next()  // the client reads one frame at a time, when the test says
                socket.yield(summary([delivery]))
            } receiving: {
                for await id in clientSays { await mailroom.post(Ping(id: id), from: room) }
            }
        }
        for id in 1...6 { client.yield(id) }  // its own lines, posted faster than it reads them
        var frames: [Int] = []
        var reading = written.makeAsyncIterator()
        while frames.reduce(0, { $0 + ($1 < 0 ? -$1 : 1) }) < 6 {
            letRead.yield()
            guard let frame = await reading.next() else { break }
            frames += frame
        }
        #expect(frames.suffix(2) == [5, 6], "the newest two are never evicted")
        #expect(frames.filter { $0 > 0 }.count + frames.filter { $0 < 0 }.reduce(0, { $0 - $1 }) == 6)
        client.finish()  // the client leaves
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .inboundEnded)
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test(
        "every count exact: received + told lost = posted, and the receipts agree, whatever the consumer's pace",
        arguments: [0, 1, 3, 16]
    )
    func countsAreExact(limit: Int) async throws {
        for policy in ["oldest", "newest"] {
            for round in 0..<scaled(20) {
                var random = SeededRandomNumberGenerator(seed: fuzzSeed &+ UInt64(round * 31 + limit))
                let mailroom = Mailroom()
                let inbox: DroppingStream<Ping> =
                    policy == "oldest"
                    ? await mailroom.subscribe(to: Ping.self, backlog: .droppingOldest(past: limit))
                    : await mailroom.subscribe(to: Ping.self, backlog: .droppingNewest(past: limit))
                let posted = 200
                // The consumer reads concurrently, with pauses of its own, while two posters race.
                let consumer = Task { () -> (mails: [Int], lost: Int) in
                    var (mails, lost) = ([Int](), 0)
                    var pause = 0
                    for await delivery in inbox {
                        switch delivery {
                        case .mail(let ping): mails.append(ping.id)
                        case .lost(let loss):
                            #expect(loss.count > 0)
                            lost += loss.count
                        }
                        if mails.count + lost >= posted { break }
                        pause += 1
                        if pause.isMultiple(of: 7) { await Task.yield() }
                    }
                    return (mails, lost)
                }
                let split = Int.random(in: 0...posted, using: &random)
                async let first = mailroom.postAll(Array(1...posted).prefix(split))
                async let second = mailroom.postAll(Array(1...posted).dropFirst(split))
                let receipts = await first + second
                let (mails, lost) = try await withTimeout { await consumer.value }
                #expect(mails.count + lost == posted, "\(policy) \(limit): \(mails.count) mails, \(lost) lost")
                #expect(receipts.dropped == lost, "the receipts count what the consumer was told")
                #expect(receipts.delivered + receipts.dropped == posted)
                #expect(Set(mails).count == mails.count, "no mail twice")
                for poster in [mails.filter { $0 <= split }, mails.filter { $0 > split }] {
                    #expect(poster == poster.sorted(), "each poster's mail in its order")
                }
            }
        }
    }
}

extension Mailroom {
    /// Posts each id in `ids` as a ping, one post each; the sum of the receipts.
    fileprivate func postAll(_ ids: ArraySlice<Int>) async -> Receipt {
        var total = Receipt()
        for (index, id) in ids.enumerated() {
            total += postSynchronously(Ping(id: id))
            await cooperate(after: index, every: 16)
        }
        return total
    }
}
