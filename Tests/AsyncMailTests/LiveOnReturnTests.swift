import AsyncMail
import Testing

@Suite("Live on return")
struct LiveOnReturnTests {
    @Test("mail posted right after subscribe returns is never missed, even before iteration starts")
    func postBeforeIterating() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let receipt = await mailroom.post(Ping(id: 1))
        #expect(receipt == Receipt(delivered: 1, dropped: 0))
        await mailroom.post(Ping(id: 2))
        let received = try await pings.first(2)
        #expect(received == [Ping(id: 1), Ping(id: 2)])
    }

    @Test("a subscription made in another task is live as soon as subscribe returns there")
    func subscribeInOtherTask() async throws {
        let mailroom = Mailroom()
        let (subscribed, signal) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            let pings = await mailroom.subscribe(to: Ping.self)
            signal.yield()
            return await pings.untimedFirst(1)
        }
        // Wait for the real event: subscribe has returned in the consumer.
        _ = try await subscribed.first(1)
        #expect(await mailroom.post(Ping(id: 7)).delivered == 1)
        let received = try await withTimeout { await consumer.value }
        #expect(received == [Ping(id: 7)])
    }

    @Test("every filtered form is live on return too", arguments: 0..<4)
    func filteredFormsAreLive(form: Int) async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let room = RoomID("lobby")
        let receipt: Receipt
        let received: Int
        switch form {
        case 0:
            let stream = await mailroom.subscribe(to: Ping.self, from: .only(alice))
            receipt = await mailroom.post(Ping(id: 1), from: alice)
            received = try await stream.first(1).count
        case 1:
            let stream = await mailroom.subscribe(to: Ping.self, from: .only(room))
            receipt = await mailroom.post(Ping(id: 1), from: room)
            received = try await stream.first(1).count
        case 2:
            let stream = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
            receipt = await mailroom.post(Ping(id: 1), from: alice)
            received = try await stream.first(1).count
        default:
            let stream = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingNewest(1))
            receipt = await mailroom.post(Ping(id: 1))
            received = try await stream.first(1).count
        }
        #expect(receipt.delivered == 1)
        #expect(received == 1)
    }
}
