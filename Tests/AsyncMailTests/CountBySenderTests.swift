import Testing

@testable import AsyncMail

@Suite("Counting by sender")
struct CountBySenderTests {
    @Test("counts the subscriptions pinned to one room, and only those")
    func countsARoom() async throws {
        let mailroom = Mailroom()
        var lobby: [AsyncStream<Ping>] = []
        for _ in 0..<3 { lobby.append(await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))) }
        let kitchen = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("kitchen")))
        let everyone = await mailroom.subscribe(to: Ping.self)
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self)
        let pongs = await mailroom.subscribe(to: Pong.self, from: .only(RoomID("lobby")))

        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 3)
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("kitchen"))) == 1)
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("attic"))) == 0)
        #expect(
            await mailroom.subscriberCount(Ping.self, from: .only("lobby")) == 0,
            "the type is part of the match"
        )
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(Optional(RoomID("lobby")))) == 3)
        let boxed: any Hashable & Sendable = RoomID("lobby")
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(boxed)) == 3)
        #expect(await mailroom.subscriberCount(Ping.self) == 6)

        lobby.removeLast()  // dropping a stream removes it at once
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 2)
        await mailroom.close()
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 0)
        withExtendedLifetime((kitchen, everyone, rooms, pongs)) {}
    }

    @Test("counts an object's subscriptions by identity, and not once it is gone")
    func countsAnObject() async throws {
        let mailroom = Mailroom()
        let original = Token(1)
        var leaving: Token? = Token(2)
        let fromOriginal = [
            await mailroom.subscribe(to: Ping.self, from: .only(original)),
            await subscribeThroughHashable(mailroom, from: original),
        ]
        let fromLeaving = await mailroom.subscribe(to: Ping.self, from: .only(leaving!))
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(original)) == 2)
        #expect(
            await mailroom.subscriberCount(Ping.self, from: .only(Token(1))) == 0,
            "an equal lookalike is another sender"
        )
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(leaving!)) == 1)
        leaving = nil
        #expect(await mailroom.subscriberCount(Ping.self) == 2, "the departed sender's stream ended")
        #expect(try await fromLeaving.collect() == [])
        withExtendedLifetime(fromOriginal) {}
    }
}
