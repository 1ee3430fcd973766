import AsyncMail
import Testing

@testable import AsyncMail

@Suite("close()")
struct CloseTests {
    @Test("close finishes every stream: consumers drain what was buffered and their loops end")
    func closeEndsLoops() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let plain = await mailroom.subscribe(to: Ping.self)
        let pinned = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let typed = await mailroom.subscribe(to: Pong.self, fromAny: Player.self)
        await mailroom.post(Ping(id: 1), from: alice)
        await mailroom.post(Pong(id: 2), from: alice)

        let plainLoop = Task { await plain.untimedCollect() }
        let pinnedLoop = Task { await pinned.untimedCollect() }
        let typedLoop = Task { await typed.untimedCollect() }
        await mailroom.close()

        #expect(try await withTimeout { await plainLoop.value } == [Ping(id: 1)])
        #expect(try await withTimeout { await pinnedLoop.value } == [Ping(id: 1)])
        #expect(try await withTimeout { await typedLoop.value }.map(\.mail) == [Pong(id: 2)])
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.routeTableCount == 0)
    }

    @Test("close is idempotent, later subscriptions are already finished, later posts deliver nothing")
    func afterClose() async throws {
        let mailroom = Mailroom()
        await mailroom.close()
        await mailroom.close()

        let late = await mailroom.subscribe(to: Ping.self)
        let latePinned = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(delivered: 0, dropped: 0))
        #expect(await mailroom.post(Ping(id: 2), from: RoomID("lobby")) == Receipt(delivered: 0, dropped: 0))
        #expect(try await late.collect() == [])
        #expect(try await latePinned.collect() == [])
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a mailroom that is deallocated finishes its streams instead of leaving consumers waiting")
    func deallocationFinishes() async throws {
        var mailroom: Mailroom? = Mailroom()
        weak let gone = mailroom
        let pings = await mailroom!.subscribe(to: Ping.self)
        await mailroom!.post(Ping(id: 1))
        mailroom = nil
        #expect(gone == nil)
        #expect(try await pings.collect() == [Ping(id: 1)])
    }
}
