import Testing

@testable import AsyncMail

@Suite("Counting by sender")
struct CountBySenderTests {
    @Test("counts whom a post from one room would reach: its own, every sender's, its sender type's; no other room's")
    func countsARoom() async throws {
        let mailroom = Mailroom()
        var lobby: [AsyncStream<Ping>] = []
        for _ in 0..<3 { lobby.append(await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))) }
        let kitchen = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("kitchen")))
        let everyone = await mailroom.subscribe(to: Ping.self)
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self)
        let pongs = await mailroom.subscribe(to: Pong.self, from: .only(RoomID("lobby")))

        // The lobby's three, plus `everyone` and `rooms`, which hear every room: what a post to it matches.
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 5)
        #expect(await mailroom.post(Ping(id: 1), from: RoomID("lobby")).matched == 5)
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("kitchen"))) == 3)
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("attic"))) == 2)
        #expect(
            await mailroom.subscriberCount(Ping.self, from: .only("lobby")) == 1,
            "the type is part of the match: a String room is heard by `everyone` only"
        )
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(Optional(RoomID("lobby")))) == 5)
        let boxed: any Hashable & Sendable = RoomID("lobby")
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(boxed)) == 5)
        #expect(await mailroom.subscriberCount(Ping.self) == 6)

        lobby.removeLast()  // dropping a stream removes it at once
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 4)
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
