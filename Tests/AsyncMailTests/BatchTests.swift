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
