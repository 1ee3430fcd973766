import AsyncMailTesting
import Testing

@testable import AsyncMail

@Suite("History per room: each room its own sequence, limits and resets")
struct RoomHistoryTests {
    @Test("a busy room never pushes a quiet room's mail out, and a reset counts only the room's own loss")
    func roomsKeepTheirOwn() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 3)
        let (quiet, busy) = (RoomID("quiet"), RoomID("busy"))
        let listener = try await mailroom.subscribe(to: Ping.self, from: .only(quiet), after: nil)
        await mailroom.post(Ping(id: 1), from: quiet)
        let seen = try await listener.mail.first(1)[0].position
        for id in 100..<200 { await mailroom.post(Ping(id: id), from: busy) }
        await mailroom.post(Ping(id: 2), from: quiet)
        let back = try await mailroom.subscribe(to: Ping.self, from: .only(quiet), after: seen)
        #expect(back.gap == nil, "the busy room's hundred mails are not the quiet room's loss")
        #expect(try await back.mail.first(1).map(\.mail.id) == [2])
        for id in 3...6 { await mailroom.post(Ping(id: id), from: quiet) }
        let late = try await mailroom.subscribe(to: Ping.self, from: .only(quiet), after: seen)
        #expect(late.gap == HistoryGap(code: .expired, missed: 2), "mails 2 and 3 of the room, exactly")
        #expect(try await late.mail.first(3).map(\.mail.id) == [4, 5, 6])
    }

    @Test("a client that heard nothing still has a position, and comes back to what was posted meanwhile")
    func startInAQuietRoom() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let room = RoomID("empty")
        let first = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        let start = try #require(first.start)
        #expect(start.sequence == 0, "nothing was posted to the room")
        #expect(try MailPosition(parsing: start.description) == start, "it travels as a string")
        await mailroom.post(Ping(id: 1), from: room)
        let back = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: start)
        #expect(back.gap == nil)
        #expect(try await back.mail.first(1).map(\.mail.id) == [1])
        #expect(back.start == start)
        withExtendedLifetime(first) {}
    }

    @Test("after: .oldestKept starts with everything the room keeps, and reports no gap")
    func oldestKept() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 2)
        let room = RoomID("r")
        for id in 1...5 { await mailroom.post(Ping(id: id), from: room) }
        let joined = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: .oldestKept)
        #expect(joined.gap == nil)
        #expect(joined.start?.sequence == 3)
        #expect(try await joined.mail.first(2).map(\.mail.id) == [4, 5])
    }

    @Test("the replay is kept apart from a bufferingNewest limit: live mail never evicts kept mail")
    func replayIsNotDroppedByTheLimit() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let room = RoomID("r")
        let probe = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        for id in 1...5 { await mailroom.post(Ping(id: id), from: room) }
        let first = try await probe.mail.first(1)[0].position
        let resumed = try await mailroom.subscribe(
            to: Ping.self,
            from: .only(room),
            after: first,
            bufferingPolicy: .bufferingNewest(1)
        )
        #expect(await mailroom.post(Ping(id: 6), from: room) == Receipt(delivered: 2))
        let seventh = await mailroom.post(Ping(id: 7), from: room)
        #expect(seventh == Receipt(delivered: 1, dropped: 1), "6, evicted by 7: \(seventh)")
        #expect(try await resumed.mail.first(5).map(\.mail.id) == [2, 3, 4, 5, 7])
        #expect(resumed.gap == nil)
    }

    @Test("a subscription to every room sees the type's positions, in one order, and resumes from them")
    func severalRooms() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 2)
        let everyone = try await mailroom.subscribe(to: Ping.self, after: nil)
        let anyRoom = try await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self, after: nil)
        for id in 1...6 { await mailroom.post(Ping(id: id), from: RoomID(id.isMultiple(of: 2) ? "a" : "b")) }
        let heard = try await everyone.mail.first(6)
        #expect(heard.map(\.position.sequence) == Array(1...6))
        let enveloped = try await anyRoom.mail.first(6)
        #expect(enveloped.map(\.position) == heard.map(\.position), "one order, one numbering")
        #expect(enveloped.map(\.mail.sender) == (1...6).map { RoomID($0.isMultiple(of: 2) ? "a" : "b") })
        // Each room keeps 2: 3…6 are kept, 1 and 2 of the six after position 0 are gone.
        let back = try await mailroom.subscribe(to: Ping.self, after: heard[0].position)
        #expect(back.gap == HistoryGap(code: .expired, missed: 1), "mail 2 of room a")
        #expect(try await back.mail.first(4).map(\.mail.id) == [3, 4, 5, 6])
        await #expect(throws: PositionError.severalRooms) {
            let room = try await mailroom.subscribe(to: Ping.self, from: .only(RoomID("a")), after: nil)
            _ = try await mailroom.subscribe(to: Ping.self, after: room.start)
        }
        await #expect(throws: PositionError.otherRoom) {
            let room = try await mailroom.subscribe(to: Ping.self, from: .only(RoomID("a")), after: nil)
            _ = try await mailroom.subscribe(to: Ping.self, from: .only(RoomID("b")), after: room.start)
        }
    }

    @Test("every room and fromAny: one rule for another mailroom's positions (a room's throws, the type's is a gap)")
    func severalRoomsOneRule() async throws {
        let (mailroom, other) = (Mailroom(), Mailroom())
        for each in [mailroom, other] { await each.retainHistory(Ping.self, count: 2) }
        let room = try await other.subscribe(to: Ping.self, from: .only(RoomID("a")), after: nil)
        let everyRoom = try await other.subscribe(to: Ping.self, after: nil)
        await other.post(Ping(id: 1), from: RoomID("a"))
        let roomPosition = try #require(try await room.mail.first(1).first?.position)
        let typePosition = try #require(try await everyRoom.mail.first(1).first?.position)

        // A room's position, of another mailroom: the caller's mistake, the same for both.
        await #expect(throws: PositionError.severalRooms) {
            _ = try await mailroom.subscribe(to: Ping.self, after: roomPosition)
        }
        await #expect(throws: PositionError.severalRooms) {
            _ = try await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self, after: roomPosition)
        }
        // The type's position, of another mailroom: nothing is known of what followed it.
        let everyone = try await mailroom.subscribe(to: Ping.self, after: typePosition)
        #expect(everyone.gap == HistoryGap(code: .otherEpoch, missed: nil))
        let anyRoom = try await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self, after: typePosition)
        #expect(anyRoom.gap == HistoryGap(code: .otherEpoch, missed: nil))
    }

    @Test("fromAny with a backlog limit: the replay is not counted; falling behind live mail ends the stream")
    func boundedSeveralRooms() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        for id in 1...4 { await mailroom.post(Ping(id: id), from: RoomID("a")) }
        let resumed = try await mailroom.subscribe(
            to: Ping.self,
            fromAny: RoomID.self,
            after: .oldestKept,
            backlog: .ending(past: 2)
        )
        #expect(resumed.gap == nil)
        for id in 5...6 { await mailroom.post(Ping(id: id), from: RoomID("b")) }  // two live: at the limit
        let heard = try await resumed.mail.first(6)
        #expect(heard.map(\.mail.mail.id) == [1, 2, 3, 4, 5, 6], "the four replayed did not count against it")
        for id in 7...8 { await mailroom.post(Ping(id: id), from: RoomID("b")) }
        #expect(await mailroom.post(Ping(id: 9), from: RoomID("b")).ended == 1, "a third live mail behind")
        await #expect(throws: BacklogLimitExceeded.self) {
            for try await _ in resumed.mail {}
        }
        #expect(
            heard.map(\.mail.sender) == [RoomID("a"), RoomID("a"), RoomID("a"), RoomID("a"), RoomID("b"), RoomID("b")]
        )
    }
}
