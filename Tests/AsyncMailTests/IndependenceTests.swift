import AsyncMail
import Dispatch
import Testing

@testable import AsyncMail

/// A mail whose deinit parks at a gate.
private final class Heavy: Mail {
    let gate: Gate?

    init(gate: Gate?) { self.gate = gate }

    deinit { gate?.park() }
}

@Suite("Posts that no subscriber can order share no lock")
struct IndependenceTests {
    @Test("a post held in a filter delays no post to another room, another type, or a tap")
    func unrelatedPostsFinish() async throws {
        let mailroom = Mailroom()
        let gate = Gate()
        let lobby = RoomID("lobby")
        let alice = Player("alice")
        let held = await mailroom.subscribe(to: Ping.self, from: .only(lobby)) { ping in
            if ping.id == 1 { gate.park() }
            return true
        }
        let kitchen = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("kitchen")))
        let fromAlice = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let pongs = await mailroom.subscribe(to: Pong.self)
        let tap = await mailroom.tap()

        let holding = Task { await onThread { mailroom.postSynchronously(Ping(id: 1), from: lobby) } }
        try await gate.waitUntilParked()
        // Each of these would wait for the parked filter if it shared a lock with its post.
        let receipts = try await withTimeout(.seconds(60)) {
            await onThread {
                [
                    mailroom.postSynchronously(Ping(id: 2), from: RoomID("kitchen")),
                    mailroom.postSynchronously(Ping(id: 3), from: alice),
                    mailroom.postSynchronously(Pong(id: 4)),
                    mailroom.postSynchronously(Ping(id: 5), from: RoomID("nobody's")),
                ]
            }
        }
        #expect(receipts == [Receipt(delivered: 1), Receipt(delivered: 1), Receipt(delivered: 1), Receipt()])
        gate.release()
        #expect(await holding.value == Receipt(delivered: 1))

        #expect(try await held.first(1).map(\.id) == [1])
        #expect(try await kitchen.first(1).map(\.id) == [2])
        #expect(try await fromAlice.first(1).map(\.id) == [3])
        #expect(try await pongs.first(1).map(\.id) == [4])
        // The tap saw all five; the held one last, as it was delivered last.
        let tapped = try await tap.first(5)
        #expect(tapped.compactMap { $0.mail(as: Ping.self)?.id ?? $0.mail(as: Pong.self)?.id } == [2, 3, 4, 5, 1])
    }

    @Test("a mail whose deinit is slow, evicted from a full buffer, delays only its own room")
    func slowDeinitDelaysOnlyItsRoom() async throws {
        let mailroom = Mailroom()
        let gate = Gate()
        let lobby = RoomID("lobby")
        let full = await mailroom.subscribe(to: Heavy.self, from: .only(lobby), bufferingPolicy: .bufferingNewest(1))
        let kitchen = await mailroom.subscribe(to: Heavy.self, from: .only(RoomID("kitchen")))
        #expect(mailroom.postSynchronously(Heavy(gate: gate), from: lobby) == Receipt(delivered: 1))
        // Evicts the first mail inside the yield; its deinit parks, holding the lobby's lane.
        let holding = Task { await onThread { mailroom.postSynchronously(Heavy(gate: nil), from: lobby) } }
        try await gate.waitUntilParked()
        let receipt = try await withTimeout(.seconds(60)) {
            await onThread { mailroom.postSynchronously(Heavy(gate: nil), from: RoomID("kitchen")) }
        }
        #expect(receipt == Receipt(delivered: 1))
        gate.release()
        #expect(await holding.value == Receipt(dropped: 1))
        #expect(try await kitchen.first(1).count == 1)
        withExtendedLifetime(full) {}
    }

    @Test(
        "posts that share a subscriber with a held post wait for it: the same room, or a type heard everywhere",
        arguments: [false, true]
    )
    func sharedSubscriberWaits(heardEverywhere: Bool) async throws {
        let gate = Gate()
        let taken = Locked<[Lanes]>([])
        let mailroom = Mailroom(laneProbe: { lanes in taken.withLock { $0.append(lanes) } })
        let lobby = RoomID("lobby")
        let held = await mailroom.subscribe(to: Ping.self, from: .only(lobby)) { ping in
            if ping.id == 1 { gate.park() }
            return true
        }
        let everyone = heardEverywhere ? await mailroom.subscribe(to: Ping.self) : nil
        let holding = Task { await onThread { mailroom.postSynchronously(Ping(id: 1), from: lobby) } }
        try await gate.waitUntilParked()
        let heldLanes = try #require(taken.withLock { $0.first })

        // The same room always waits; another room waits only while a subscription hears both.
        let room = heardEverywhere ? RoomID("kitchen") : lobby
        let waiting = Task { await onThread { mailroom.postSynchronously(Ping(id: 2), from: room) } }
        try await waitUntil("the second post has taken its lanes' turn", within: .seconds(60)) {
            taken.withLock { $0.count } == 2
        }
        let waitingLanes = taken.withLock { $0[1] }
        #expect(waitingLanes.sharesALock(with: heldLanes))
        // The lane they share is held by the parked post, so the second cannot be delivering.
        let shared = try #require(
            [waitingLanes._type, waitingLanes._room].compactMap { $0 }.first { lane in
                lane === heldLanes._type || lane === heldLanes._room
            }
        )
        #expect(shared.isHeld)
        gate.release()
        #expect(await holding.value == Receipt(delivered: heardEverywhere ? 2 : 1))
        #expect(await waiting.value == Receipt(delivered: heardEverywhere ? 1 : 1))
        if let everyone {
            #expect(try await everyone.first(2).map(\.id) == [1, 2])
        } else {
            #expect(try await held.first(2).map(\.id) == [1, 2])
        }
    }

    @Test(
        "the rule: a room's posts share its lane; a type's share its lane only while a subscription hears several rooms"
    )
    func laneRule() {
        let type = Lane()
        let lobby = Lane()
        let kitchen = Lane()
        func lanes(_ room: Lane?, heardEverywhere: Bool) -> Lanes {
            Lanes(type: type, room: room, hearsSeveralRooms: heardEverywhere)
        }
        // Independent rooms: nothing shared but the room itself.
        #expect(!lanes(lobby, heardEverywhere: false).sharesALock(with: lanes(kitchen, heardEverywhere: false)))
        #expect(lanes(lobby, heardEverywhere: false).sharesALock(with: lanes(lobby, heardEverywhere: false)))
        #expect(!lanes(nil, heardEverywhere: false).sharesALock(with: lanes(nil, heardEverywhere: false)))
        #expect(lanes(nil, heardEverywhere: false)._type == nil)
        // A subscription that hears several rooms orders every post of the type.
        #expect(lanes(lobby, heardEverywhere: true).sharesALock(with: lanes(kitchen, heardEverywhere: true)))
        #expect(lanes(nil, heardEverywhere: true).sharesALock(with: lanes(kitchen, heardEverywhere: true)))
        // While one comes or goes, a room's posts still share the room's lane.
        #expect(lanes(lobby, heardEverywhere: true).sharesALock(with: lanes(lobby, heardEverywhere: false)))
        // Another type's lanes are other objects altogether.
        #expect(
            !lanes(lobby, heardEverywhere: true).sharesALock(
                with: Lanes(type: Lane(), room: Lane(), hearsSeveralRooms: true)
            )
        )
    }

    @Test("every kind of post takes the lanes the rule gives it", arguments: [false, true])
    func postsTakeTheRulesLanes(heardEverywhere: Bool) async throws {
        let taken = Locked<[Lanes]>([])
        let mailroom = Mailroom(laneProbe: { lanes in taken.withLock { $0.append(lanes) } })
        let alice = Player("alice")
        let streams = [
            await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby"))),
            await mailroom.subscribe(to: Ping.self, from: .only(alice)),
        ]
        let everyone = heardEverywhere ? await mailroom.subscribe(to: Ping.self, fromAny: Player.self) : nil
        await mailroom.post(Ping(id: 1), from: RoomID("lobby"))
        await mailroom.post(Ping(id: 2), from: RoomID("lobby"))
        await mailroom.post(Ping(id: 3), from: alice)
        await mailroom.post(Ping(id: 4), from: RoomID("empty"))
        await mailroom.post(Ping(id: 5))
        let lanes = taken.withLock { $0 }
        try #require(lanes.count == 5)
        #expect(lanes[0].sharesALock(with: lanes[1]), "one room")
        #expect(lanes[0].sharesALock(with: lanes[2]) == heardEverywhere, "two rooms")
        #expect(lanes[3]._room == nil, "a room nobody subscribes to has no lane")
        #expect((lanes[3]._type != nil) == heardEverywhere)
        #expect((lanes[4]._type != nil) == heardEverywhere, "no sender: heard only by subscriptions to every room")
        withExtendedLifetime((streams, everyone)) {}
    }
}
