import Testing

@testable import AsyncMail

/// A protocol that some senders conform to.
protocol Named: Sendable {
    var name: String { get }
}

extension Player: Named {}
extension RoomID: Named {}

/// A sender class with subclasses. `@unchecked` because Swift accepts `Sendable` only on final
/// classes; it is safe because `Vehicle` and `Truck` hold nothing but immutable `let`s of
/// `Sendable` types, so no instance has state two threads could race on. The tests below share
/// instances across tasks, and ThreadSanitizer runs them in CI.
class Vehicle: Hashable, @unchecked Sendable {
    let plate: String
    init(_ plate: String) { self.plate = plate }
    static func == (lhs: Vehicle, rhs: Vehicle) -> Bool { lhs.plate == rhs.plate }
    func hash(into hasher: inout Hasher) { hasher.combine(plate) }
}

final class Truck: Vehicle, @unchecked Sendable {}

@Suite("Sender types: every sender that is the type, however the post site spells it")
struct SenderTypeTests {
    @Test("a sender reaches the same sender-type subscriptions whatever static type the post site gives it")
    func spellingNeverChangesWhoHears() async throws {
        let mailroom = Mailroom()
        let anySendable = await mailroom.subscribe(to: Ping.self, fromAny: (any Sendable).self)
        let colliding = await mailroom.subscribe(to: Ping.self, fromAny: Colliding.self)
        let boxed: any Hashable & Sendable = Colliding("k")
        #expect(await mailroom.post(Ping(id: 1), from: Colliding("k")) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 2), from: boxed) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 3), from: Optional(Colliding("k"))) == Receipt(delivered: 2))
        #expect(await relay(Ping(id: 4), from: boxed, via: mailroom) == Receipt(delivered: 2))
        #expect(await mailroom.post(contentsOf: [Ping(id: 5)], from: boxed) == Receipt(delivered: 2))
        #expect(mailroom.postSynchronously(Ping(id: 6), from: boxed) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 7)) == Receipt(), "no sender is no sender type")
        #expect(await mailroom.post(Ping(id: 8), from: RoomID("a")) == Receipt(delivered: 1))
        let ids = [1, 2, 3, 4, 5, 6]
        #expect(try await colliding.first(6).map(\.mail.id) == ids)
        #expect(try await anySendable.first(7).map(\.mail.id) == ids + [8])
    }

    @Test("a protocol sender type hears every conforming sender, with the sender as that protocol")
    func protocolSenderType() async throws {
        let mailroom = Mailroom()
        let named = await mailroom.subscribe(to: Ping.self, fromAny: (any Named).self)
        let alice = Player("alice")
        let boxedAlice: any AnyObject & Sendable = alice
        #expect(await mailroom.post(Ping(id: 1), from: alice) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: boxedAlice) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 3), from: RoomID("lobby")) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 4), from: Colliding("not named")) == Receipt())
        #expect(await mailroom.post(Ping(id: 5), from: Lobby()) == Receipt())
        let envelopes = try await named.first(3)
        #expect(envelopes.map(\.mail.id) == [1, 2, 3])
        #expect(envelopes.map(\.sender.name) == ["alice", "alice", "lobby"])
    }

    @Test("a class sender type hears its subclasses; a subclass does not hear its superclass")
    func superclassSenderType() async throws {
        let mailroom = Mailroom()
        let vehicles = await mailroom.subscribe(to: Ping.self, fromAny: Vehicle.self)
        let trucks = await mailroom.subscribe(to: Ping.self, fromAny: Truck.self)
        let truck = Truck("T-1")
        let asVehicle: Vehicle = truck
        #expect(await mailroom.post(Ping(id: 1), from: truck) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 2), from: asVehicle) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 3), from: Optional(asVehicle)) == Receipt(delivered: 2))
        #expect(await relay(Ping(id: 4), from: asVehicle, via: mailroom) == Receipt(delivered: 2), "as a Hashable")
        #expect(await mailroom.post(Ping(id: 5), from: Vehicle("V-1")) == Receipt(delivered: 1))
        #expect(try await trucks.first(4).map(\.mail.id) == [1, 2, 3, 4])
        let seen = try await vehicles.first(5)
        #expect(seen.map(\.mail.id) == [1, 2, 3, 4, 5])
        #expect(seen.map(\.sender.plate) == ["T-1", "T-1", "T-1", "T-1", "V-1"])
    }

    @Test("adding and removing a sender type after a sender's type was matched re-matches it")
    func matchesFollowSubscriptions() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        var players: AsyncStream<Envelope<Ping, Player>>? = await mailroom.subscribe(
            to: Ping.self,
            fromAny: Player.self
        )
        #expect(await mailroom.post(Ping(id: 1), from: alice) == Receipt(delivered: 1))
        let named = await mailroom.subscribe(to: Ping.self, fromAny: (any Named).self)
        #expect(await mailroom.post(Ping(id: 2), from: alice) == Receipt(delivered: 2), "the new type is matched")
        players = nil
        #expect(await mailroom.post(Ping(id: 3), from: alice) == Receipt(delivered: 1), "the dropped one is not")
        #expect(try await named.first(2).map(\.mail.id) == [2, 3])
        withExtendedLifetime(players) {}
    }

    @Test("startingWithLatest on a sender type replays the newest mail kept from a sender that is the type")
    func senderTypeReplay() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        let alice = Player("alice")
        await mailroom.post(Ping(id: 1), from: alice)
        await mailroom.post(Ping(id: 2), from: RoomID("lobby"))
        await mailroom.post(Ping(id: 3), from: Colliding("x"))
        await mailroom.post(Ping(id: 4))
        let players = await mailroom.subscribe(to: Ping.self, fromAny: Player.self, startingWithLatest: true)
        let named = await mailroom.subscribe(to: Ping.self, fromAny: (any Named).self, startingWithLatest: true)
        let trucks = await mailroom.subscribe(to: Ping.self, fromAny: Truck.self, startingWithLatest: true)
        await mailroom.post(Ping(id: 5), from: alice)
        let replayed = try await players.first(2)
        #expect(replayed.map(\.mail.id) == [1, 5])
        #expect(replayed.allSatisfy { $0.sender === alice })
        #expect(try await named.first(2).map(\.mail.id) == [2, 5], "the newer of two senders")
        await mailroom.close()
        #expect(try await trucks.collect().isEmpty, "no truck posted")
    }

    @Test("a sender type takes a backlog limit, and ends a consumer that falls behind")
    func senderTypeBacklogLimit() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let players = await mailroom.subscribe(to: Ping.self, fromAny: Player.self, backlog: .ending(past: 2))
        #expect(await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)], from: alice) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 3), from: alice) == Receipt(ended: 1))
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        await #expect(throws: BacklogLimitExceeded.self) {
            for try await _ in players {}
        }
    }

    @Test("an observation with a backlog limit ends when its handler falls behind, and says so")
    func observationBacklogLimit() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let (entered, enteredReport) = AsyncStream.makeStream(of: Int.self)
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let observation = await mailroom.observe(Ping.self, owner: recorder, backlog: .ending(past: 1)) {
            recorder,
            ping in
            enteredReport.yield(ping.id)
            if ping.id == 1 { for await _ in gate { break } }  // hold the first call until told
            await recorder.handle(ping.id, pause: false)
        }
        await mailroom.post(Ping(id: 1))
        _ = try await entered.first(1)  // the handler is busy with 1
        #expect(await mailroom.post(Ping(id: 2)) == Receipt(delivered: 1), "one mail fits the backlog")
        #expect(await mailroom.post(Ping(id: 3)) == Receipt(ended: 1), "the next finds it full and ends it")
        #expect(observation.exceededBacklogLimit)
        #expect(!observation.isCancelled)
        open.yield()
        try await withTimeout { await observation.waitUntilEnded() }
        #expect(await recorder.seen == [1], "no call starts after the observation ended")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("subscriberCount(_:from: .everyone) counts every subscription, as leaving from: out does")
    func countEveryone() async {
        let mailroom = Mailroom()
        let everyone = await mailroom.subscribe(to: Ping.self)
        let lobby = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        let players = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
        #expect(await mailroom.subscriberCount(Ping.self, from: .everyone) == 3, "everyone narrows nothing")
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 2, "the lobby's, everyone's")
        #expect(await mailroom.subscriberCount(Ping.self) == 3)
        #expect(await mailroom.subscriberCount(Ping.self, fromAny: Player.self) == 1)
        #expect(await mailroom.subscriberCount(Ping.self, fromAny: RoomID.self) == 0)
        withExtendedLifetime((everyone, lobby, players)) {}
    }

    @Test("latest(_:fromAny:) is the newest mail of any sender of the type, with its sender")
    func latestFromAny() async {
        let mailroom = Mailroom()
        #expect(await mailroom.latest(Ping.self, fromAny: Player.self) == nil, "the type keeps nothing yet")
        await mailroom.retainLatest(Ping.self)
        let (ada, bo) = (Player("ada"), Player("bo"))
        await mailroom.post(Ping(id: 1), from: ada)
        await mailroom.post(Ping(id: 2), from: bo)
        await mailroom.post(Ping(id: 3), from: RoomID("lobby"))
        await mailroom.post(Ping(id: 4))
        let newest = await mailroom.latest(Ping.self, fromAny: Player.self)
        #expect(newest?.mail == Ping(id: 2))
        #expect(newest?.sender === bo)
        #expect(await mailroom.latest(Ping.self, fromAny: RoomID.self)?.mail == Ping(id: 3))
        #expect(await mailroom.latest(Ping.self, fromAny: Token.self) == nil)
        withExtendedLifetime((ada, bo)) {}
    }

    @Test(".only(nil) hears nothing, for objects as for values")
    func onlyNil() async throws {
        let mailroom = Mailroom()
        let noPlayer = await mailroom.subscribe(to: Ping.self, from: .only(Player?.none))
        let noRoom = await mailroom.subscribe(to: Ping.self, from: .only(RoomID?.none))
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: Player?.none) == Receipt())
        #expect(await mailroom.post(Ping(id: 3), from: RoomID?.none) == Receipt())
        #expect(await mailroom.subscriberCount(Ping.self) == 2)
        await mailroom.close()
        #expect(try await noPlayer.collect().isEmpty)
        #expect(try await noRoom.collect().isEmpty)
    }
}
