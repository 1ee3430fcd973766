import AsyncMail
import Testing

@Suite("Post-time filters")
struct FilterTests {
    @Test("rejected mail never takes a buffer slot and is not counted")
    func rejectedMailIsNotBuffered() async throws {
        let mailroom = Mailroom()
        let evens = await mailroom.subscribe(
            to: Ping.self,
            bufferingPolicy: .bufferingOldest(1),
            where: { $0.id.isMultiple(of: 2) }
        )
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
        #expect(await mailroom.post(Ping(id: 3)) == Receipt())
        #expect(await mailroom.post(Ping(id: 2)) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 4)) == Receipt(dropped: 1), "the one slot holds 2")
        #expect(try await evens.first(1) == [Ping(id: 2)])
    }

    @Test("filters combine with every sender filter", arguments: 0..<4)
    func combinesWithSenderFilters(form: Int) async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let room = RoomID("lobby")
        let big: @Sendable (Ping) -> Bool = { $0.id >= 10 }
        let received: [Int]
        switch form {
        case 0:
            let stream = await mailroom.subscribe(to: Ping.self, where: big)
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 10)])
            received = try await stream.first(1).map(\.id)
        case 1:
            let stream = await mailroom.subscribe(to: Ping.self, from: .only(alice), where: big)
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 10)], from: alice)
            received = try await stream.first(1).map(\.id)
        case 2:
            let stream = await mailroom.subscribe(to: Ping.self, from: .only(room), where: big)
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 10)], from: room)
            received = try await stream.first(1).map(\.id)
        default:
            let stream = await mailroom.subscribe(to: Ping.self, fromAny: Player.self, where: big)
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 10)], from: alice)
            received = try await stream.first(1).map(\.mail.id)
        }
        #expect(received == [10])
    }

    @Test("a filter only narrows: unfiltered subscribers still get everything")
    func othersUnaffected() async throws {
        let mailroom = Mailroom()
        let all = await mailroom.subscribe(to: Ping.self)
        let none = await mailroom.subscribe(to: Ping.self, where: { _ in false })
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(delivered: 1))
        #expect(try await all.first(1) == [Ping(id: 1)])
        #expect(await mailroom.subscriberCount(Ping.self) == 2, "a filtered subscription is still a subscription")
        withExtendedLifetime(none) {}
    }
}
