import Testing

@testable import AsyncMail

@Suite("Counting by sender")
struct CountBySenderTests {
    @Test("counts the subscriptions pinned to one room, and only those")
    func countsARoom() async throws {
        let mailroom = Mailroom()
        var lobby: [AsyncStream<Ping>] = []
        for _ in 0..<3 { lobby.append(await mailroom.subscribe(to: Ping.self, from: RoomID("lobby"))) }
        let kitchen = await mailroom.subscribe(to: Ping.self, from: RoomID("kitchen"))
        let everyone = await mailroom.subscribe(to: Ping.self)
        let rooms = await mailroom.subscribe(to: Ping.self, from: RoomID.self)
        let pongs = await mailroom.subscribe(to: Pong.self, from: RoomID("lobby"))

        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("lobby")) == 3)
        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("kitchen")) == 1)
        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("attic")) == 0)
        #expect(await mailroom.subscriberCount(for: Ping.self, from: "lobby") == 0, "the type is part of the match")
        #expect(await mailroom.subscriberCount(for: Ping.self, from: Optional(RoomID("lobby"))) == 3)
        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("lobby") as any Sendable) == 3)
        #expect(await mailroom.subscriberCount(for: Ping.self) == 6)

        lobby.removeLast()  // dropping a stream removes it at once
        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("lobby")) == 2)
        await mailroom.close()
        #expect(await mailroom.subscriberCount(for: Ping.self, from: RoomID("lobby")) == 0)
        withExtendedLifetime((kitchen, everyone, rooms, pongs)) {}
    }

    @Test("counts an object's subscriptions by identity, and not once it is gone")
    func countsAnObject() async throws {
        let mailroom = Mailroom()
        let original = Token(1)
        var leaving: Token? = Token(2)
        let fromOriginal = [
            await mailroom.subscribe(to: Ping.self, from: original),
            await subscribeThroughHashable(mailroom, from: original),
        ]
        let fromLeaving = await mailroom.subscribe(to: Ping.self, from: leaving!)
        #expect(await mailroom.subscriberCount(for: Ping.self, from: original) == 2)
        #expect(
            await mailroom.subscriberCount(for: Ping.self, from: Token(1)) == 0,
            "an equal lookalike is another sender"
        )
        #expect(await mailroom.subscriberCount(for: Ping.self, from: leaving!) == 1)
        leaving = nil
        #expect(await mailroom.subscriberCount(for: Ping.self) == 2, "the departed sender's stream ended")
        #expect(try await withTimeout { await fromLeaving.collect() } == [])
        withExtendedLifetime(fromOriginal) {}
    }
}
