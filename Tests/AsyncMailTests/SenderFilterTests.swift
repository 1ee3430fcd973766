import Testing

@testable import AsyncMail

/// Posts through a generic context that knows only that the sender is an object.
func relay<S: AnyObject & Sendable>(_ mail: Ping, from sender: S, via mailroom: Mailroom) async -> Receipt {
    await mailroom.post(mail, from: sender)
}

/// Posts through a generic context that knows only that the sender is `Hashable`: an object that
/// arrives this way must still be matched by identity.
@_disfavoredOverload
func relay<S: Hashable & Sendable>(_ mail: Ping, from sender: S, via mailroom: Mailroom) async -> Receipt {
    await mailroom.post(mail, from: sender)
}

@Suite("Sender filters")
struct SenderFilterTests {
    @Test("an object-pinned subscription sees only that object's mail")
    func identity() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let bob = Player("bob")
        let fromAlice = await mailroom.subscribe(to: Ping.self, from: .only(alice))

        #expect(await mailroom.post(Ping(id: 1), from: bob) == Receipt())
        #expect(await mailroom.post(Ping(id: 2)) == Receipt())
        #expect(await mailroom.post(Ping(id: 3), from: alice) == Receipt(delivered: 1))
        #expect(try await fromAlice.first(1) == [Ping(id: 3)])
    }

    @Test("an actor can be a sender, matched by identity")
    func actorSender() async throws {
        let mailroom = Mailroom()
        let lobby = Lobby()
        let fromLobby = await mailroom.subscribe(to: Ping.self, from: .only(lobby))
        #expect(await mailroom.post(Ping(id: 1), from: Lobby()) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: lobby) == Receipt(delivered: 1))
        #expect(try await fromLobby.first(1) == [Ping(id: 2)])
    }

    @Test("a class that is also Hashable matches by identity, never by ==")
    func hashableObjectMatchesByIdentity() async throws {
        let mailroom = Mailroom()
        let original = Token(1)
        let lookalike = Token(1)
        #expect(original == lookalike)
        let stream = await mailroom.subscribe(to: Ping.self, from: .only(original))
        #expect(await mailroom.post(Ping(id: 1), from: lookalike) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: original) == Receipt(delivered: 1))
        #expect(try await stream.first(1) == [Ping(id: 2)])
    }

    @Test("a value-pinned subscription matches equal values of the same type only")
    func valueEquality() async throws {
        let mailroom = Mailroom()
        let lobby = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))

        #expect(await mailroom.post(Ping(id: 1), from: RoomID("kitchen")) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: "lobby") == Receipt())
        #expect(await mailroom.post(Ping(id: 3), from: RoomID("lobby")) == Receipt(delivered: 1))
        #expect(try await lobby.first(1) == [Ping(id: 3)])
    }

    /// The `Hashable` forms of `post` work out a room's digest from the static type (no dynamic
    /// cast): each sender below must still reach exactly the room its value names, as classified
    /// at run time.
    @Test("a sender posted through the Hashable forms reaches the room its value names, whatever its static type")
    func hashableFormsClassifyByValue() async throws {
        let mailroom = Mailroom()
        let token = Token(7)
        let byValue = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        let byObject = await mailroom.subscribe(to: Ping.self, from: .only(token))
        func viaHashable<H: Hashable & Sendable>(_ id: Int, from sender: H) async -> Receipt {
            await mailroom.post(Ping(id: id), from: sender)
        }
        func viaHashableSynchronously<H: Hashable & Sendable>(_ id: Int, from sender: H) -> Receipt {
            mailroom.postSynchronously(Ping(id: id), from: sender)
        }
        // An Optional is looked through, however deeply nested, and nil is no sender.
        #expect(await viaHashable(1, from: RoomID?.some(RoomID("lobby"))) == Receipt(delivered: 1))
        #expect(await viaHashable(2, from: RoomID?.none) == Receipt())
        #expect(viaHashableSynchronously(5, from: RoomID??.some(.some(RoomID("lobby")))) == Receipt(delivered: 1))
        // A class that is also Hashable matches by identity, never by ==.
        #expect(await viaHashable(3, from: token) == Receipt(delivered: 1))
        #expect(viaHashableSynchronously(4, from: Token(7)) == Receipt())
        // A value of another type with an equal description is another room.
        #expect(viaHashableSynchronously(6, from: "lobby") == Receipt())
        #expect(viaHashableSynchronously(7, from: RoomID("lobby")) == Receipt(delivered: 1))
        #expect(try await byValue.first(3).map(\.id) == [1, 5, 7])
        #expect(try await byObject.first(1).map(\.id) == [3])
    }

    @Test("numeric senders of different types never match each other")
    func numericTypesStayApart() async throws {
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Ping.self, from: .only(1 as Int))
        #expect(await mailroom.post(Ping(id: 1), from: 1 as Int64) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: 1 as UInt8) == Receipt())
        #expect(await mailroom.post(Ping(id: 3), from: 1 as Int) == Receipt(delivered: 1))
        #expect(try await stream.first(1) == [Ping(id: 3)])
    }

    @Test("a generic poster routes exactly like a concrete one")
    func genericPoster() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let byObject = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let byValue = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        #expect(await relay(Ping(id: 1), from: alice, via: mailroom) == Receipt(delivered: 1))
        #expect(await relay(Ping(id: 2), from: RoomID("lobby"), via: mailroom) == Receipt(delivered: 1))
        #expect(try await byObject.first(1) == [Ping(id: 1)])
        #expect(try await byValue.first(1) == [Ping(id: 2)])
    }

    @Test("a sender boxed in an existential routes exactly like the concrete one")
    func existentialSenders() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let lobby = Lobby()
        let byObject = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let byActor = await mailroom.subscribe(to: Ping.self, from: .only(lobby))
        let byValue = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        // Variables of existential type: the compiler opens them, so the post sees the
        // sender's own type (an `as any …` coercion would keep the box, and does not compile).
        let boxedAlice: any AnyObject & Sendable = alice
        let boxedLobby: any Actor = lobby
        let boxedRoom: any Hashable & Sendable = RoomID("lobby")
        let boxedStranger: any AnyObject & Sendable = Player("alice")
        #expect(await mailroom.post(Ping(id: 1), from: boxedAlice) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: Optional(boxedAlice)) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 3), from: boxedLobby) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 4), from: boxedRoom) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 5), from: boxedStranger) == Receipt())
        #expect(try await byObject.first(2) == [Ping(id: 1), Ping(id: 2)])
        #expect(try await byActor.first(1) == [Ping(id: 3)])
        #expect(try await byValue.first(1) == [Ping(id: 4)])
    }

    @Test("a sender that lives only for its post is matched and recorded safely (keys hold senders unretained)")
    func senderThatLivesOnlyForItsPost() async {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        // The post's key reads these objects without retaining them; AddressSanitizer in CI
        // would report a read after the caller let go.
        #expect(await mailroom.post(Ping(id: 1), from: Optional(Player("passing"))) == Receipt())
        #expect(await mailroom.post(Ping(id: 2), from: Player("passing")) == Receipt())
        #expect(await mailroom.latest(Ping.self) == Ping(id: 2), "the type's current value, though its sender is gone")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.retainedObjectSenderCount(for: Ping.self) == 0, "the departed senders' mail is dropped")
    }

    @Test("a sender-type subscription hands over envelopes from every sender of that type")
    func senderType() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let bob = Player("bob")
        let envelopes = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)

        #expect(await mailroom.post(Ping(id: 1), from: alice) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: RoomID("lobby")) == Receipt())
        #expect(await mailroom.post(Ping(id: 3)) == Receipt())
        #expect(await mailroom.post(Ping(id: 4), from: bob) == Receipt(delivered: 1))

        let received = try await envelopes.first(2)
        #expect(received.map(\.mail) == [Ping(id: 1), Ping(id: 4)])
        #expect(received[0].sender === alice)
        #expect(received[1].sender === bob)
    }

    @Test("mail without a sender reaches only unfiltered subscriptions; mail with one reaches all that match")
    func noSenderReachesOnlyUnfiltered() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let everything = await mailroom.subscribe(to: Ping.self)
        let pinned = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        let byValue = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        let byType = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)

        #expect(await mailroom.post(Ping(id: 1)) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: alice) == Receipt(delivered: 3))
        #expect(try await everything.first(2) == [Ping(id: 1), Ping(id: 2)])
        #expect(try await pinned.first(1) == [Ping(id: 2)])
        #expect(try await byType.first(1).map(\.mail) == [Ping(id: 2)])
        withExtendedLifetime(byValue) {}
    }

    @Test("an object-pinned subscription holds its sender weakly and ends at the next post once it is gone")
    func weakSenderEndsAtNextPost() async throws {
        let mailroom = Mailroom()
        var alice: Player? = Player("alice")
        weak let departed = alice
        let stream = await mailroom.subscribe(to: Ping.self, from: .only(alice!))
        alice = nil
        #expect(departed == nil, "the subscription must not keep its sender alive")
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
        // The stream has finished: collecting it ends instead of waiting.
        #expect(try await stream.collect() == [])
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a departed sender's subscription ends at the next subscriberCount too")
    func weakSenderEndsAtCount() async throws {
        let mailroom = Mailroom()
        var lobby: Lobby? = Lobby()
        let stream = await mailroom.subscribe(to: Ping.self, from: .only(lobby!))
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        lobby = nil
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(try await stream.collect() == [])
    }

    @Test(
        "a new object at a departed sender's address is a different sender",
        .disabled(if: addressSanitizerIsActive, "AddressSanitizer quarantines freed memory, so no address is reused")
    )
    func reusedAddressIsANewSender() async throws {
        // Whether freed memory comes back to this thread depends on the allocator and on what
        // the other tests allocate meanwhile, so a round that finds no reuse starts over.
        for _ in 0..<50 {
            let mailroom = Mailroom()
            var departed: Player? = Player("departed")
            let oldIdentity = ObjectIdentifier(departed!)
            let oldStream = await mailroom.subscribe(to: Ping.self, from: .only(departed!))
            departed = nil
            let (newcomer, attempts) = allocatePlayer(at: oldIdentity)
            guard let sameAddress = newcomer else { continue }

            // Subscribing before any post or count has swept the departed sender's route.
            let newStream = await mailroom.subscribe(to: Ping.self, from: .only(sameAddress))
            #expect(await mailroom.post(Ping(id: 1), from: sameAddress) == Receipt(delivered: 1))
            #expect(try await newStream.first(1) == [Ping(id: 1)])
            #expect(try await oldStream.collect() == [])
            #expect(await mailroom.subscriberCount(Ping.self) == 1)
            withExtendedLifetime(attempts) {}
            return
        }
        Issue.record("the allocator never reused a departed sender's address in 50 rounds")
    }

    /// Allocates players until one lands at `identity`, keeping the others alive so that each
    /// allocation takes fresh memory; synchronous, so it runs on the thread that freed it.
    private func allocatePlayer(at identity: ObjectIdentifier) -> (Player?, [Player]) {
        var attempts: [Player] = []
        for _ in 0..<10_000 {
            let candidate = Player("newcomer")
            if ObjectIdentifier(candidate) == identity { return (candidate, attempts) }
            attempts.append(candidate)
        }
        return (nil, attempts)
    }

    @Test("with many pinned senders, a departed one's stream ends within that many posts, or at once on a count")
    func departedAmongManyEndsWithinBound() async throws {
        let mailroom = Mailroom()
        let stayers = 40
        let (kept, ended) = await pinStayersAndALeaver(stayers, on: mailroom)

        // With no more than a sweep batch pinned, every `n` posts check all `n` senders.
        for id in 0...stayers { await mailroom.post(Ping(id: id)) }
        #expect(try await withTimeout { await ended.value } == [])
        #expect(await mailroom.subscriberCount(Ping.self) == stayers)

        // A count checks them all at once.
        var another: Player? = Player("another")
        let alsoLeaving = await mailroom.subscribe(to: Ping.self, from: .only(another!))
        another = nil
        #expect(await mailroom.subscriberCount(Ping.self) == stayers)
        #expect(try await alsoLeaving.collect() == [])
        withExtendedLifetime(kept) {}
    }

    @Test("unequal sender values that share a hash stay apart: delivery, cancellation and replay")
    func collidingSenderValues() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        let (north, south, east) = (Colliding("north"), Colliding("south"), Colliding("east"))
        #expect(north.hashValue == south.hashValue && south.hashValue == east.hashValue)
        let fromNorth = await mailroom.subscribe(to: Ping.self, from: .only(north))
        var fromSouth: AsyncStream<Ping>? = await mailroom.subscribe(to: Ping.self, from: .only(south))
        let fromEast = await mailroom.subscribe(to: Ping.self, from: .only(east))

        #expect(await mailroom.post(Ping(id: 1), from: north) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: south) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 3), from: east) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 4), from: Colliding("west")) == Receipt())
        #expect(try await fromNorth.first(1) == [Ping(id: 1)])
        #expect(try await fromEast.first(1) == [Ping(id: 3)])

        // Dropping the middle one leaves the others routed.
        #expect(fromSouth != nil, "south's receipt above says it got Ping 2, and north and east did not")
        fromSouth = nil
        #expect(await mailroom.subscriberCount(Ping.self) == 2)
        #expect(await mailroom.post(Ping(id: 5), from: south) == Receipt())
        #expect(await mailroom.post(Ping(id: 6), from: east) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 7), from: north) == Receipt(delivered: 1))
        #expect(try await fromEast.first(1) == [Ping(id: 6)])
        #expect(try await fromNorth.first(1) == [Ping(id: 7)])

        // The latest mail is kept per sender value, not per hash.
        #expect(await mailroom.latest(Ping.self, from: .only(north)) == Ping(id: 7))
        #expect(await mailroom.latest(Ping.self, from: .only(south)) == Ping(id: 5))
        #expect(await mailroom.latest(Ping.self, from: .only(east)) == Ping(id: 6))
        #expect(await mailroom.latest(Ping.self, from: .only(Colliding("west"))) == Ping(id: 4))
        #expect(await mailroom.latest(Ping.self, from: .only(Colliding("nowhere"))) == nil)
    }

    @Test("a sender written as an existential inline is routed as the value inside it")
    func inlineExistentialSender() async throws {
        let mailroom = Mailroom()
        let lobby = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self)
        let alice = Token(7)  // Hashable, and an object: matched by identity even inside the box
        let fromAlice = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        #expect(
            await mailroom.post(Ping(id: 1), from: RoomID("lobby") as any Hashable & Sendable) == Receipt(delivered: 2)
        )
        #expect(
            await mailroom.post(contentsOf: [Ping(id: 2)], from: RoomID("hall") as any Hashable & Sendable)
                == Receipt(delivered: 1)
        )
        #expect(
            mailroom.postSynchronously(Ping(id: 3), from: alice as any Hashable & Sendable) == Receipt(delivered: 1)
        )
        #expect(try await lobby.first(1) == [Ping(id: 1)])
        #expect(try await rooms.first(2).map(\.mail) == [Ping(id: 1), Ping(id: 2)])
        #expect(try await fromAlice.first(1) == [Ping(id: 3)])
    }

    @Test("an optional existential sender, and a boxed one given to .only, route as the value inside")
    func optionalExistentialSender() async throws {
        let mailroom = Mailroom()
        let lobby = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby") as any Hashable & Sendable))
        let room: (any Hashable & Sendable)? = RoomID("lobby")
        let alsoLobby = await mailroom.subscribe(to: Ping.self, from: .only(room))
        let noRoom: (any Hashable & Sendable)? = nil
        let nobody = await mailroom.subscribe(to: Ping.self, from: .only(noRoom))
        let everyone = await mailroom.subscribe(to: Ping.self)
        let alice = Token(7)
        let aliceInABox: (any Hashable & Sendable)? = alice
        let fromAlice = await mailroom.subscribe(to: Ping.self, from: .only(aliceInABox))
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("lobby"))) == 3, "both lobbies, everyone")

        #expect(await mailroom.post(Ping(id: 1), from: room) == Receipt(delivered: 3))
        #expect(await mailroom.post(Ping(id: 2), from: noRoom) == Receipt(delivered: 1), "nil: no sender")
        #expect(await mailroom.post(contentsOf: [Ping(id: 3)], from: room) == Receipt(delivered: 3))
        #expect(mailroom.postSynchronously(Ping(id: 4), from: aliceInABox) == Receipt(delivered: 2))
        #expect(mailroom.postSynchronously(contentsOf: [Ping(id: 5)], from: noRoom) == Receipt(delivered: 1))
        #expect(try await lobby.first(2) == [Ping(id: 1), Ping(id: 3)])
        #expect(try await alsoLobby.first(2) == [Ping(id: 1), Ping(id: 3)])
        #expect(try await everyone.first(5).map(\.id) == [1, 2, 3, 4, 5])
        #expect(try await fromAlice.first(1) == [Ping(id: 4)], "an object in the box is matched by identity")
        await mailroom.close()
        #expect(try await nobody.collect().isEmpty, ".only(nil) hears nothing")
    }

    @Test("a value room is its sender's by the type's own ==, however the sender is posted or subscribed")
    func valueRoomMatchesByEquality() async throws {
        let mailroom = Mailroom()
        let north = Colliding("north")
        // One room per hash: the post finds it by hash alone and checks equality after unlocking.
        let fromNorth = await mailroom.subscribe(to: Ping.self, from: .only(north))
        let boxed: any Hashable & Sendable = Colliding("north")
        // A key classified at run time, with no statically known type to compare by.
        let fromBoxed = await mailroom.subscribe(to: Ping.self, from: .only(boxed))
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(north)) == 2)

        #expect(await mailroom.post(Ping(id: 1), from: Colliding("south")) == Receipt())  // same hash
        #expect(await mailroom.post(Ping(id: 2), from: north) == Receipt(delivered: 2))  // its own type
        #expect(await mailroom.post(Ping(id: 3), from: boxed) == Receipt(delivered: 2))  // opened
        #expect(await mailroom.post(Ping(id: 4), from: Optional(north)) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 5), from: "north") == Receipt())  // another type
        #expect(try await fromNorth.first(3) == [Ping(id: 2), Ping(id: 3), Ping(id: 4)])
        #expect(try await fromBoxed.first(3) == [Ping(id: 2), Ping(id: 3), Ping(id: 4)])
    }

    @Test("with more pinned senders than a sweep batch, a departed one's stream ends within n + batch - 1 posts")
    func departedAmongMoreThanABatchEndsWithinBound() async throws {
        let batch = RouteTable<Ping>.sweepBatch
        let mailroom = Mailroom()
        let stayers = 2 * batch + 10
        let (kept, ended) = await pinStayersAndALeaver(stayers, on: mailroom)

        // Batches of `batch` consecutive senders, one every `batch` posts: the round-robin
        // reaches every one of the `n` pinned senders within `n + batch - 1` posts.
        let pinnedCount = stayers + 1
        for id in 0..<(pinnedCount + batch - 1) { await mailroom.post(Ping(id: id)) }
        #expect(try await withTimeout { await ended.value } == [])
        #expect(await mailroom.subscriberCount(Ping.self) == stayers)
        withExtendedLifetime(kept) {}
    }

    /// Pins `count` senders that stay, then one that departs at once. Returns what keeps the
    /// stayers pinned, and a task that finishes with the departed one's mail when its stream ends.
    private func pinStayersAndALeaver(
        _ count: Int,
        on mailroom: Mailroom
    ) async -> (kept: [any Sendable], leaverEnded: Task<[Ping], Never>) {
        var kept: [any Sendable] = []
        for number in 0..<count {
            let stayer = Player("stayer \(number)")
            kept += [stayer, await mailroom.subscribe(to: Ping.self, from: .only(stayer))] as [any Sendable]
        }
        var leaver: Player? = Player("leaver")
        let leaving = await mailroom.subscribe(to: Ping.self, from: .only(leaver!))
        leaver = nil
        return (kept, Task { await leaving.untimedCollect() })
    }
}
