import AsyncMailTesting
import TestSupport
import Testing

@_spi(AsyncMailInternal) @testable import AsyncMail

/// A type that keeps its latest mail and its history keeps both in one store per room
/// (`KeptMail`, `KeptRoom`): one room, one count of stamps, one sweep of departed senders.
@Suite("Kept mail: the latest and the history of a room in one store")
struct KeptMailTests {
    @Test("a room that kept only its latest mail gets its digest and epoch when history starts")
    func latestThenHistory() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        let (early, late) = (RoomID("early"), RoomID("late"))
        await mailroom.post(Ping(id: 1), from: early)  // makes the room, with no digest
        await mailroom.retainHistory(Ping.self, count: 10)
        let earlyStart = try #require(try await mailroom.subscribe(to: Ping.self, from: .only(early), after: nil).start)
        let lateStart = try #require(try await mailroom.subscribe(to: Ping.self, from: .only(late), after: nil).start)
        #expect(earlyStart.epoch == lateStart.epoch, "both rooms are in the mailroom's epoch")
        let fresh = Mailroom()
        await fresh.retainHistory(Ping.self, count: 10)
        let freshStart = try #require(try await fresh.subscribe(to: Ping.self, from: .only(early), after: nil).start)
        #expect(earlyStart.room == freshStart.room, "the room's digest is the one any mailroom gives it")
        #expect(earlyStart.sequence == 0, "the mail kept as latest before history is not in the history")
        await mailroom.post(Ping(id: 2), from: early)
        let back = try await mailroom.subscribe(to: Ping.self, from: .only(early), after: earlyStart)
        #expect(back.gap == nil)
        #expect(try await back.mail.first(1).map(\.mail.id) == [2])
        #expect(await mailroom.latest(Ping.self, from: .only(early)) == Ping(id: 2))
    }

    @Test("a post that keeps history and its latest mail draws one stamp per mail, so missed counts stay exact")
    func oneCountOfStamps() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        await mailroom.retainHistory(Ping.self, count: 1)
        let start = try #require(try await mailroom.subscribe(to: Ping.self, after: nil).start)
        for id in 1...3 { await mailroom.post(Ping(id: id), from: RoomID("a")) }
        await mailroom.post(contentsOf: [Ping(id: 4), Ping(id: 5)], from: RoomID("b"))
        let back = try await mailroom.subscribe(to: Ping.self, after: start)
        #expect(
            back.gap == HistoryGap(code: .expired, missed: 3),
            "1 and 2 of room a, 4 of room b: \(String(describing: back.gap))"
        )
        #expect(try await back.mail.first(2).map(\.mail.id) == [3, 5])
        #expect(await mailroom.latest(Ping.self, from: .only(RoomID("a"))) == Ping(id: 3))
        #expect(await mailroom.latest(Ping.self, fromAny: RoomID.self)?.mail == Ping(id: 5))
        await mailroom.post(Ping(id: 6), from: RoomID("a"))
        #expect(
            await mailroom.latest(Ping.self, fromAny: RoomID.self)?.mail == Ping(id: 6),
            "ordered by stamp across rooms"
        )
    }

    @Test("the latest mail outlives the history's entries: a new epoch drops the history, not the latest")
    func latestOutlivesTheHistory() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        await mailroom.retainHistory(Ping.self, count: 5)
        let room = RoomID("r")
        for id in 1...3 { await mailroom.post(Ping(id: id), from: room) }
        mailroom._route(Ping.self, through: { _ in false })  // a relay that carries nothing
        mailroom._route(Ping.self, through: nil)  // stopped: a new epoch of the mailroom's own
        let joined = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: .oldestKept)
        #expect(joined.start?.sequence == 3, "nothing kept in the new epoch")
        #expect(await mailroom.latest(Ping.self, from: .only(room)) == Ping(id: 3))
        #expect(await mailroom.latest(Ping.self) == Ping(id: 3))
    }

    /// A room made by a post through the `Hashable` forms keeps its sender's `==` and is found
    /// again without a cast; one made by a sender classified at run time compares with casts.
    /// Either way, two senders that share a hash must keep two rooms.
    @Test("senders that share a hash keep their own history and latest mail, however they are posted")
    func collidingRoomsStayApart() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        await mailroom.retainHistory(Ping.self, count: 10)
        let (north, south) = (Colliding("north"), Colliding("south"))
        #expect(north.hashValue == south.hashValue)
        await mailroom.post(Ping(id: 1), from: north)  // by its own type: the room's key keeps `==`
        await mailroom.post(Ping(id: 2), from: south as any Hashable & Sendable)  // classified at run time
        mailroom.postSynchronously(Ping(id: 3), from: north)
        await mailroom.post(Ping(id: 4), from: south)
        await mailroom.post(Ping(id: 5), from: north as any Hashable & Sendable)
        #expect(await mailroom.latest(Ping.self, from: .only(north)) == Ping(id: 5))
        #expect(await mailroom.latest(Ping.self, from: .only(south)) == Ping(id: 4))
        let northRoom = try await mailroom.subscribe(to: Ping.self, from: .only(north), after: .oldestKept)
        let southRoom = try await mailroom.subscribe(to: Ping.self, from: .only(south), after: .oldestKept)
        #expect(try await northRoom.mail.first(3).map(\.mail.id) == [1, 3, 5])
        #expect(try await southRoom.mail.first(2).map(\.mail.id) == [2, 4])
    }

    // A heavy test: beside the stress suites' posting threads, its own 4 took 58 to 141 s under
    // ThreadSanitizer, past its 2-minute `.timeLimit` once.
    @Test(
        "threads posting to value and object rooms beside readers of every kind: each room keeps its last posts",
        .heavyTurns(limit: .seconds(120))
    )
    func concurrentPostsAndReads() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Ping.self)
        await mailroom.retainHistory(Ping.self, count: 4)
        let players = (0..<4).map { Player("player \($0)") }
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<4 {
                group.addTask {
                    await onBackgroundThread {
                        for id in 0..<500 {
                            _ = mailroom.postSynchronously(Ping(id: id), from: RoomID("room \(poster)"))
                            _ = mailroom.postSynchronously(Ping(id: id), from: players[poster])
                        }
                    }
                }
            }
            group.addTask {
                // Readers of every kept room at once: several rooms' latest, counts (which sweep),
                // one room's latest and resumes of several rooms.
                for round in 0..<200 {
                    _ = await mailroom.latest(Ping.self, fromAny: RoomID.self)
                    _ = await mailroom.subscriberCount(Ping.self)
                    _ = await mailroom.latest(Ping.self, from: .only(players[round % 4]))
                    _ = try? await mailroom.subscribe(to: Ping.self, fromAny: Player.self, after: .oldestKept)
                    await Task.yield()
                }
            }
        }
        for poster in 0..<4 {
            #expect(await mailroom.latest(Ping.self, from: .only(RoomID("room \(poster)"))) == Ping(id: 499))
            #expect(await mailroom.latest(Ping.self, from: .only(players[poster])) == Ping(id: 499))
            let joined = try await mailroom.subscribe(to: Ping.self, from: .only(players[poster]), after: .oldestKept)
            #expect(try await joined.mail.first(4).map(\.mail.id) == [496, 497, 498, 499])
        }
    }

    @Test("posts alone sweep departed senders' rooms that kept history, across shards, once they double")
    func departedHistoryRoomsSweptByPostsAlone() async {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 2)
        var first: [Player]? = (0..<100).map { Player("first \($0)") }
        for sender in first! { await mailroom.post(Ping(id: 1), from: sender) }
        // Made while the first hundred live, so no address is reused.
        let second = (0..<100).map { Player("second \($0)") }
        first = nil
        for sender in second { await mailroom.post(Ping(id: 2), from: sender) }
        // Swept per shard when they doubled there, about three rooms a shard would never be.
        #expect(await mailroom.retainedObjectSenderCount(for: Ping.self) == 100)
        withExtendedLifetime(second) {}
    }
}
