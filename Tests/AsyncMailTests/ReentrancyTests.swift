import AsyncMail
import Testing

@Suite("Re-entrancy")
struct ReentrancyTests {
    @Test("a consumer can post the same mail type from inside its loop")
    func postSameTypeFromLoop() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let consumer = Task {
            var seen: [Int] = []
            for await ping in pings {
                seen.append(ping.id)
                guard ping.id > 0 else { break }
                await mailroom.post(Ping(id: ping.id - 1))
            }
            return seen
        }
        await mailroom.post(Ping(id: 10))
        #expect(try await withTimeout { await consumer.value } == Array((0...10).reversed()))
    }

    @Test("a consumer can post other mail, and subscribe, from inside its loop")
    func postOtherTypeFromLoop() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let pongs = await mailroom.subscribe(to: Pong.self)
        let responder = Task {
            for await ping in pings {
                let extra = await mailroom.subscribe(to: Pong.self)
                await mailroom.post(Pong(id: ping.id))
                _ = await extra.untimedFirst(1)
                if ping.id == 3 { break }
            }
        }
        for id in 1...3 { await mailroom.post(Ping(id: id)) }
        #expect(try await pongs.first(3) == [Pong(id: 1), Pong(id: 2), Pong(id: 3)])
        try await withTimeout { await responder.value }
        #expect(await mailroom.subscriberCount(Pong.self) == 1)
    }
}
