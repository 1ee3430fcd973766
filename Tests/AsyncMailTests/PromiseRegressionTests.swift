import Synchronization
import Testing

@testable import AsyncMail

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Owns a stream of its mailroom: releasing the last reference ends that stream, whose
/// termination handler takes the mailroom's registry lock.
final class StreamOwner: Sendable {
    let stream: AsyncStream<Ping>
    init(_ stream: AsyncStream<Ping>) { self.stream = stream }
}

/// Kept mail whose deinit (through its owner) ends a stream of the same mailroom.
struct Carrier: Mail {
    let owner: StreamOwner
}

/// Holds a stream so that a filter can let go of it.
final class StreamHolder: Sendable {
    let stream = Locked<AsyncStream<Ping>?>(nil)
}

/// Subscribes to a pinned sender through a generic context that knows only `Hashable`.
func subscribeThroughHashable<S: Hashable & Sendable>(_ mailroom: Mailroom, from sender: S) async -> AsyncStream<Ping> {
    await mailroom.subscribe(to: Ping.self, from: .only(sender))
}

@Suite("Promises kept: user code never runs under the registry lock")
struct UserCodeOutsideTheLockTests {
    @Test("replacing kept mail whose deinit ends a stream of the same mailroom does not crash or deadlock")
    func replacedKeptMailReleasedAfterUnlocking() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Carrier.self)
        await mailroom.post(Carrier(owner: StreamOwner(await mailroom.subscribe(to: Ping.self))))
        #expect(await mailroom.subscriberCount(Ping.self) == 1, "the kept mail holds the only reference")
        // The second post replaces the first, whose release ends the first stream.
        await mailroom.post(Carrier(owner: StreamOwner(await mailroom.subscribe(to: Ping.self))))
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        await mailroom.close()
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("kept mail of a departed sender, and per-sender kept mail, is released after unlocking")
    func sweptKeptMailReleasedAfterUnlocking() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Carrier.self)
        var sender: Player? = Player("leaving")
        await mailroom.post(Carrier(owner: StreamOwner(await mailroom.subscribe(to: Ping.self))), from: sender!)
        await mailroom.post(Carrier(owner: StreamOwner(await mailroom.subscribe(to: Ping.self))), from: RoomID("a"))
        await mailroom.post(Carrier(owner: StreamOwner(await mailroom.subscribe(to: Ping.self))), from: RoomID("a"))
        #expect(await mailroom.subscriberCount(Ping.self) == 2, "replacing room a's mail ended one stream")
        sender = nil
        // A count sweeps the departed sender's kept mail.
        #expect(await mailroom.subscriberCount(Carrier.self) == 0)
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        #expect(await mailroom.latest(Carrier.self, from: .only(RoomID("a"))) != nil)
        await mailroom.close()
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a replay filter that drops a stream of the same mailroom runs outside the registry lock")
    func replayFilterOutsideTheLock() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Pong.self)
        await mailroom.post(Pong(id: 1))
        let holder = StreamHolder()
        holder.stream.withLock { $0 = nil }
        let held = await mailroom.subscribe(to: Ping.self)
        holder.stream.withLock { $0 = held }
        _ = consume held
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        let replaying = await mailroom.subscribe(to: Pong.self, startingWithLatest: true) { _ in
            holder.stream.withLock { $0 = nil }  // ends the Ping stream: takes the registry lock
            return true
        }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(try await replaying.first(1) == [Pong(id: 1)])
    }
}

@Suite("Promises kept: departed senders")
struct DepartedSenderTests {
    @Test("a count after the sweep cursor wrapped finds every departed sender")
    func countAfterWrap() async throws {
        let mailroom = Mailroom()
        var first: Player? = Player("s0")
        var second: Player? = Player("s1")
        let older = Player("s2")  // made before it is pinned
        let fromFirst = await mailroom.subscribe(to: Ping.self, from: .only(first!))
        let fromSecond = await mailroom.subscribe(to: Ping.self, from: .only(second!))
        await mailroom.post(Ping(id: 1))
        await mailroom.post(Ping(id: 2))
        second = nil
        first = nil
        let fromOlder = await mailroom.subscribe(to: Ping.self, from: .only(older))
        #expect(await mailroom.subscriberCount(Ping.self) == 1)
        #expect(try await fromFirst.collect() == [])
        #expect(try await fromSecond.collect() == [])
        withExtendedLifetime((older, fromOlder)) {}
    }

    @Test("with 7 objects pinned, a departed sender's stream ends within 7 posts")
    func sevenPinned() async throws {
        let mailroom = Mailroom()
        var stayers: [any Sendable] = []
        var leavers: [Player?] = []
        var leaving: [AsyncStream<Ping>] = []
        for number in 0..<7 {
            let player = Player("p\(number)")
            let stream = await mailroom.subscribe(to: Ping.self, from: .only(player))
            if number.isMultiple(of: 2) {
                stayers += [player, stream] as [any Sendable]
            } else {
                leavers.append(player)
                leaving.append(stream)
            }
        }
        for id in 0..<5 { await mailroom.post(Ping(id: id)) }  // moves the cursor somewhere
        leavers = []
        for id in 0..<7 { await mailroom.post(Ping(id: id)) }
        for stream in leaving {
            #expect(try await stream.collect() == [])
        }
        withExtendedLifetime(stayers) {}
    }

    @Test(
        "exhaustively for n ≤ 6: every departed sender is found within n posts, from any cursor and phase",
        arguments: 1...6
    )
    func sweepBoundExhaustive(n: Int) async {
        for warmUp in 0..<(2 * n + 1) {
            for departing in 1..<(1 << n) {
                await Task.yield()  // long and synchronous: let the tests beside it run (see Tests/README.md)
                // A table with one subscription pinned to each sender; `sweepAfterPost()` is
                // what each post of the type calls.
                var senders: [Player?] = (0..<n).map { Player("p\($0)") }
                let table = RouteTable<Ping>()
                var streams: [AsyncStream<Ping>] = []
                for sender in senders {
                    let (stream, continuation) = SubscriptionContinuation.makeStream(of: Ping.self)
                    streams.append(stream)
                    let subscriber = Subscriber(continuation: continuation, accepts: nil, endSignal: nil, contexts: nil)
                    _ = table.add(subscriber, at: .object(ObjectIdentifier(sender!)), pinning: sender)
                }
                for _ in 0..<warmUp { #expect(table.sweepAfterPost().isEmpty) }
                for index in 0..<n where departing & (1 << index) != 0 { senders[index] = nil }
                var found = 0
                for _ in 0..<n { found += table.sweepAfterPost().count }
                #expect(
                    found == departing.nonzeroBitCount,
                    "n \(n), \(warmUp) posts before, departing mask \(departing): found \(found)"
                )
                #expect(table._objectRoutes.load(ordering: .relaxed) == n - found)
                withExtendedLifetime(streams) {}
            }
        }
    }

    @Test(
        "exhaustively for n ≤ 6: a full sweep after any cursor position finds every departed sender",
        arguments: 1...6
    )
    func fullSweepExhaustive(n: Int) async {
        for warmUp in 0..<(2 * n + 1) {
            for departing in 1..<(1 << n) {
                await Task.yield()  // long and synchronous: let the tests beside it run (see Tests/README.md)
                var senders: [Player?] = (0..<n).map { Player("p\($0)") }
                let late = Player("late")  // made first, so it cannot reuse a departed sender's address
                var routes = ObjectRoutes<Ping>()
                for sender in senders { _ = routes.insert(ObjectRoute(sender: sender!)) }
                _ = routes.sweep(budget: warmUp % (n + 1))  // moves the cursor somewhere
                for index in 0..<n where departing & (1 << index) != 0 { senders[index] = nil }
                // Pinned after the cursor moved: the route the old sweep's budget re-checked.
                _ = routes.insert(ObjectRoute(sender: late))
                #expect(routes.removeAllDeparted().count == departing.nonzeroBitCount)
                #expect(routes._routes.count == n + 1 - departing.nonzeroBitCount)
                withExtendedLifetime((senders, late)) {}
            }
        }
    }
}

@Suite("Promises kept: one classification of senders")
struct SenderClassificationTests {
    @Test("a Hashable object pinned through a generic Hashable parameter matches by identity")
    func genericHashableObject() async throws {
        let mailroom = Mailroom()
        var original: Token? = Token(1)
        weak let gone = original
        let stream = await subscribeThroughHashable(mailroom, from: original!)
        #expect(await mailroom.post(Ping(id: 1), from: Token(1)) == Receipt(), "an equal lookalike is not the sender")
        #expect(await mailroom.post(Ping(id: 2), from: original!) == Receipt(delivered: 1))
        #expect(try await stream.first(1) == [Ping(id: 2)])
        original = nil
        #expect(gone == nil, "the subscription must hold its sender weakly")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("Optional senders are looked through on both sides; nil is no sender")
    func optionalSenders() async throws {
        let mailroom = Mailroom()
        let bob = Player("bob")
        let fromBob = await mailroom.subscribe(to: Ping.self, from: .only(bob))
        let fromLobby = await subscribeThroughHashable(mailroom, from: Optional(RoomID("lobby")))
        let players = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
        let everyone = await mailroom.subscribe(to: Ping.self)
        let pinnedToNil = await subscribeThroughHashable(mailroom, from: RoomID?.none)  // receives nothing

        #expect(await mailroom.post(Ping(id: 1), from: Optional(bob)) == Receipt(delivered: 3))
        let boxedBob: (any AnyObject & Sendable)? = bob
        #expect(await mailroom.post(Ping(id: 2), from: boxedBob) == Receipt(delivered: 3))
        #expect(await mailroom.post(Ping(id: 3), from: RoomID("lobby")) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 4), from: Player?.none) == Receipt(delivered: 1), "nil: no sender")
        #expect(await mailroom.post(contentsOf: [Ping(id: 5)], from: Optional(bob)) == Receipt(delivered: 3))
        #expect(try await fromBob.first(3).map(\.id) == [1, 2, 5])
        #expect(try await fromLobby.first(1).map(\.id) == [3])
        #expect(try await players.first(3).map(\.mail.id) == [1, 2, 5])
        #expect(try await everyone.first(5).map(\.id) == [1, 2, 3, 4, 5])
        #expect(await mailroom.subscriberCount(Ping.self) == 5, "the one pinned to nil is live and counted")
        await mailroom.close()
        #expect(try await pinnedToNil.collect() == [], "nil is no sender: nothing matched it")
    }

    @Test("latest(_:from:) classifies its sender as posts do")
    func latestFromOptional() async {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        let bob = Player("bob")
        await mailroom.post(Ping(id: 1), from: bob)
        #expect(await mailroom.latest(Ping.self, from: .only(Optional(bob))) == Ping(id: 1))
        let boxed: any AnyObject & Sendable = bob
        #expect(await mailroom.latest(Ping.self, from: .only(boxed)) == Ping(id: 1))
    }

    @Test("sender-type subscriptions match the sender's own type, however the post site spells it")
    func senderTypeThroughExistentials() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let players = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self)
        let held: any AnyObject & Sendable = alice
        let room: any Hashable & Sendable = RoomID("a")
        #expect(await mailroom.post(Ping(id: 1), from: alice) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 2), from: Optional(alice)) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 3), from: held) == Receipt(delivered: 1))
        #expect(await relay(Ping(id: 4), from: held, via: mailroom) == Receipt(delivered: 1))
        #expect(mailroom.postSynchronously(Ping(id: 4), from: Optional(held)) == Receipt(delivered: 1))
        #expect(await mailroom.post(Ping(id: 5), from: room) == Receipt(delivered: 1))
        let envelopes = try await players.first(5)
        #expect(envelopes.map(\.mail.id) == [1, 2, 3, 4, 4])
        #expect(envelopes.allSatisfy { $0.sender === alice })
        #expect(try await rooms.first(1).map(\.sender) == [RoomID("a")])
    }
}

@Suite("Promises kept: ThreadSanitizer sees AsyncMail's locks in a user's build")
struct ThreadSanitizerTests {
    @Test("the annotations are found exactly when the ThreadSanitizer runtime is in the process")
    func annotationsFoundUnderThreadSanitizer() {
        // Under `swift test --sanitize=thread` (CI runs it with no flags of ours) both are true.
        #expect((ThreadSanitizer.current != nil) == threadSanitizerIsActive)
    }
}
