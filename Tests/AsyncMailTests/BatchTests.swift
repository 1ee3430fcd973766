import AsyncMail
import Testing

@Suite("post(contentsOf:)")
struct BatchTests {
    @Test("a batch arrives in order and its receipt adds up every mail's")
    func orderAndReceipt() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let stalled = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(2))
        let receipt = await mailroom.post(contentsOf: (0..<5).map(Ping.init(id:)))
        #expect(receipt == Receipt(delivered: 5 + 2, dropped: 3))
        #expect(try await pings.first(5).map(\.id) == Array(0..<5))
        withExtendedLifetime(stalled) {}
    }

    @Test("a batch from a sender is routed like single posts from it")
    func fromSender() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let pinned = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let envelopes = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
        let elsewhere = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        #expect(await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)], from: alice) == Receipt(delivered: 4))
        #expect(try await pinned.first(2) == [Ping(id: 1), Ping(id: 2)])
        #expect(try await envelopes.first(2).map(\.sender.name) == ["alice", "alice"])
        withExtendedLifetime(elsewhere) {}
    }

    @Test("each subscription takes the whole batch in order: every list, a filter, one that ends mid-batch")
    func everyListInOrder() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let everyone = await mailroom.subscribe(to: Ping.self)
        let evens = await mailroom.subscribe(to: Ping.self, where: { $0.id.isMultiple(of: 2) })
        let pinned = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let envelopes = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
        let bounded = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 3))
        let receipt = await Self.post((1...6).map(Ping.init(id:)), from: alice, to: mailroom)
        // 6 each for everyone, pinned and envelopes; 3 evens; 3 before the bounded one ended.
        #expect(receipt == Receipt(delivered: 6 * 3 + 3 + 3, ended: 1))
        #expect(try await everyone.first(6).map(\.id) == Array(1...6))
        #expect(try await evens.first(3).map(\.id) == [2, 4, 6])
        #expect(try await pinned.first(6).map(\.id) == Array(1...6))
        #expect(try await envelopes.first(6).map(\.mail.id) == Array(1...6))
        #expect(await mailroom.subscriberCount(Ping.self) == 4)
        withExtendedLifetime(bounded) {}
    }

    /// Posts from code generic over the mail type, as a relay does.
    private static func post<M: Mail>(_ mails: [M], from sender: Player, to mailroom: Mailroom) async -> Receipt {
        await mailroom.post(contentsOf: mails, from: sender)
    }

    @Test("an empty batch delivers nothing")
    func emptyBatch() async {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        #expect(await mailroom.post(contentsOf: [Ping]()) == Receipt())
        withExtendedLifetime(pings) {}
    }

    @Test("concurrent batches never interleave: each arrives as one unbroken run")
    func batchesAreContiguous() async throws {
        let mailroom = Mailroom()
        let batches = 20
        let size = 50
        let stream = await mailroom.subscribe(to: Numbered.self)
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<batches {
                group.addTask {
                    await mailroom.post(contentsOf: (0..<size).map { Numbered(poster: poster, sequence: $0) })
                }
            }
        }
        let received = try await stream.first(batches * size)
        for run in stride(from: 0, to: received.count, by: size) {
            let batch = received[run..<run + size]
            #expect(Set(batch.map(\.poster)).count == 1, "a batch was interleaved with another")
            #expect(batch.map(\.sequence) == Array(0..<size))
        }
    }
}
