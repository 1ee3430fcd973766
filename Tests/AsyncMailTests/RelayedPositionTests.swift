import Synchronization
import Testing

@_spi(AsyncMailInternal) @testable import AsyncMail

/// The posts a route took, for the relay these tests stand in for.
private final class TakenPosts: Sendable {
    private let posts = Locked<[[Int]]>([])
    let takes: Bool

    init(takes: Bool = true) { self.takes = takes }

    var ids: [[Int]] { posts.withLock { $0 } }

    func route(_ mails: [PostedMail]) -> Bool {
        guard takes else { return false }
        posts.withLock { $0.append(mails.compactMap { $0.mail(as: Ping.self)?.id }) }
        return true
    }
}

private let tableEpoch: UInt64 = 0xfeed

private func pings(_ ids: ClosedRange<Int>) -> [Ping] { ids.map { Ping(id: $0) } }

/// The room every post here is made from: positions are per room.
private let room = RoomID("lobby")

private func position(_ sequence: UInt64, epoch: UInt64 = tableEpoch) -> MailPosition {
    MailPosition(
        epoch: epoch,
        stream: RoomDigest.fnv1a(String(reflecting: Ping.self)),
        room: RoomDigest.of(SenderKey(room)),
        sequence: sequence
    )
}

/// What a fleet-wide relay does with a mailroom's history, with no database: the table's
/// arithmetic (rows read twice, rows deleted before they were read, a table made anew, a
/// position another instance read first) decided in the core, where the relay hands it over.
@Suite("Relayed positions: the table's numbers, without a database")
struct RelayedPositionTests {
    @Test("a routed post goes to the relay, not to subscribers; read back, it has the table's positions")
    func routedPostsComeBackPositioned() async throws {
        let mailroom = Mailroom()
        let taken = TakenPosts()
        mailroom._route(Ping.self, through: { taken.route($0) })
        let live = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        let plain = await mailroom.subscribe(to: Ping.self)
        let receipt = await mailroom.post(contentsOf: pings(1...2), from: room)
        #expect(receipt == Receipt(), "nobody hears it before the table gives it a position")
        #expect(taken.ids == [[1, 2]], "one post, whole")

        mailroom._postPositioned(contentsOf: pings(1...2), from: room, epoch: tableEpoch, first: 7, live: true)
        let heard = try await live.mail.first(2)
        #expect(heard.map(\.position) == [position(7), position(8)])
        #expect(try await plain.first(2).map(\.id) == [1, 2])
    }

    @Test("a post the relay cannot take: delivered here at once to subscriptions without positions only, and not kept")
    func refusedPostsHaveNoPosition() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        mailroom._route(Ping.self, through: { _ in false })  // the queue full, say
        let live = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        let plain = await mailroom.subscribe(to: Ping.self)
        let receipt = await mailroom.post(Ping(id: 1), from: room)
        #expect(receipt == Receipt(delivered: 1), "the plain subscription alone: there is no position to give")
        #expect(try await plain.first(1).map(\.id) == [1])
        mailroom._postPositioned(contentsOf: pings(2...2), from: room, epoch: tableEpoch, first: 1, live: true)
        #expect(try await live.mail.first(1).map(\.mail.id) == [2], "the refused post never reached it")
        let resumed = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: .oldestKept)
        #expect(try await resumed.mail.first(1).map(\.mail.id) == [2], "nor the history")
    }

    @Test("a row read twice is skipped; only the new part of an overlapping one is delivered")
    func rowsReadTwiceAreSkipped() async throws {
        let mailroom = Mailroom()
        mailroom._route(Ping.self, through: { _ in true })
        let live = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        mailroom._postPositioned(contentsOf: pings(1...3), from: room, epoch: tableEpoch, first: 1, live: true)
        let again = mailroom._postPositioned(
            contentsOf: pings(1...3),
            from: nil,
            epoch: tableEpoch,
            first: 1,
            live: true
        )
        #expect(again == Receipt(), "nothing delivered twice")
        mailroom._postPositioned(contentsOf: pings(3...5), from: room, epoch: tableEpoch, first: 3, live: true)
        #expect(try await live.mail.first(5).map(\.mail.id) == [1, 2, 3, 4, 5])
    }

    @Test("rows deleted before they were read: a resume from before them is told exactly how many it missed")
    func holesAreCountedExactly() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        mailroom._route(Ping.self, through: { _ in true })
        mailroom._postPositioned(contentsOf: pings(1...4), from: room, epoch: tableEpoch, first: 1, live: true)
        // Rows 5 to 9 were deleted by retention before this mailroom read them.
        mailroom._postPositioned(contentsOf: pings(10...11), from: room, epoch: tableEpoch, first: 10, live: true)
        let resumed = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(2))
        #expect(resumed.gap == HistoryGap(code: .expired, missed: 7), "3 and 4 were dropped with the hole; 5 to 9 gone")
        #expect(try await resumed.mail.first(2).map(\.mail.id) == [10, 11])

        // The newest rows deleted too: the table's newest position moves the history on.
        mailroom._postPositioned(contentsOf: [Ping](), from: room, epoch: tableEpoch, first: 21, live: true)
        let late = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(11))
        #expect(late.gap == HistoryGap(code: .expired, missed: 9), "12 to 20 are gone")
    }

    @Test("a table made anew: its epoch is adopted, and a position from the old one is a gap of unknown size")
    func anotherEpochIsAdopted() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        mailroom._route(Ping.self, through: { _ in true })
        mailroom._postPositioned(contentsOf: pings(1...3), from: room, epoch: tableEpoch, first: 1, live: true)
        mailroom._postPositioned(contentsOf: pings(4...4), from: room, epoch: 0xbeef, first: 1, live: true)
        let old = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(2))
        #expect(old.gap == HistoryGap(code: .otherEpoch, missed: nil))
        let new = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(0, epoch: 0xbeef))
        #expect(new.gap == nil)
        #expect(try await new.mail.first(1).map(\.position) == [position(1, epoch: 0xbeef)])
    }

    @Test("a position another instance read first is waited for: live mail up to it is not heard twice")
    func positionAheadIsWaitedFor() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        mailroom._route(Ping.self, through: { _ in true })
        mailroom._postPositioned(contentsOf: pings(1...2), from: room, epoch: tableEpoch, first: 1, live: true)
        let resumed = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(4))
        #expect(resumed.gap == nil)
        mailroom._postPositioned(contentsOf: pings(3...6), from: room, epoch: tableEpoch, first: 3, live: true)
        #expect(try await resumed.mail.first(2).map(\.mail.id) == [5, 6], "3 and 4 were heard on the other instance")

        // Further ahead than a burst can be: a forged position, refused as before.
        await #expect(throws: PositionError.self) {
            try await mailroom.subscribe(
                to: Ping.self,
                from: .only(room),
                after: position(7 + Switchboard.positionsAhead)
            )
        }
        mailroom._route(Ping.self, through: nil)
        let unrouted = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(7))
        #expect(unrouted.gap?.code == .otherEpoch, "unrouted, the table's positions are no longer this mailroom's")
    }

    @Test("mail filled in as the relay starts is kept for resumes and heard by nobody live")
    func filledMailIsOnlyKept() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        #expect(mailroom._historyLimits(Ping.self)?.count == 100)
        #expect(mailroom._historyLimits(Pong.self) == nil)
        mailroom._route(Ping.self, through: { _ in true })
        let live = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        let filled = mailroom._postPositioned(
            contentsOf: pings(1...3),
            from: room,
            epoch: tableEpoch,
            first: 1,
            live: false
        )
        #expect(filled == Receipt())
        let resumed = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: position(1))
        #expect(try await resumed.mail.first(2).map(\.mail.id) == [2, 3])
        mailroom._postPositioned(contentsOf: pings(4...4), from: room, epoch: tableEpoch, first: 4, live: true)
        #expect(try await live.mail.first(1).map(\.mail.id) == [4], "live hears only what came after")
    }

    @Test("a post the relay cannot carry is delivered here at once, without a position; unrouted, a new epoch")
    func refusedPostsStayLocal() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        let refusing = TakenPosts(takes: false)
        mailroom._route(Ping.self, through: { refusing.route($0) })
        let plain = await mailroom.subscribe(to: Ping.self)
        let positioned = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        #expect(await mailroom.post(Ping(id: 1), from: room).delivered == 1, "the plain subscription only")
        #expect(try await plain.first(1).map(\.id) == [1])

        mailroom._postPositioned(contentsOf: pings(2...2), from: room, epoch: tableEpoch, first: 1, live: true)
        #expect(try await positioned.mail.first(1).map(\.position) == [position(1)])
        mailroom._route(Ping.self, through: nil)
        await mailroom.post(Ping(id: 3), from: room)
        let local = try await positioned.mail.first(1)[0].position
        #expect(local.epoch != tableEpoch, "positions of its own again, which no table position can be taken for")
        #expect(local.sequence == 2)
    }

    @Test("a room the table has not numbered starts at its beginning (epoch 0), which resumes with the table's rows")
    func unnumberedRoomStartsAtItsBeginning() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 3)
        let unrouted = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        #expect(unrouted.start?.epoch != 0, "without a relay, the mailroom's own epoch: no other process shares it")
        mailroom._route(Ping.self, through: { _ in true })
        let quiet = try await mailroom.subscribe(to: Ping.self, from: .only(room), after: nil)
        let beginning = try #require(quiet.start)
        #expect(beginning == position(0, epoch: 0))

        // As another process would see it: the table numbered the room meanwhile.
        let other = Mailroom()
        await other.retainHistory(Ping.self, count: 3)
        other._route(Ping.self, through: { _ in true })
        other._postPositioned(contentsOf: pings(1...2), from: room, epoch: tableEpoch, first: 1, live: true)
        let resumed = try await other.subscribe(to: Ping.self, from: .only(room), after: beginning)
        #expect(resumed.gap == nil)
        #expect(try await resumed.mail.first(2).map(\.position) == [position(1), position(2)])
        #expect(try await other.subscribe(to: Ping.self, from: .only(room), after: nil).start == position(2))

        // Past what the room keeps: the mails before its oldest kept are counted, exactly.
        other._postPositioned(contentsOf: pings(3...5), from: room, epoch: tableEpoch, first: 3, live: true)
        let late = try await other.subscribe(to: Ping.self, from: .only(room), after: beginning)
        #expect(late.gap == HistoryGap(code: .expired, missed: 2))
        #expect(try await late.mail.first(3).map(\.mail.id) == [3, 4, 5])

        // Without a relay, nothing says how the room was numbered: an unknown gap, not a guess.
        other._route(Ping.self, through: nil)
        let unshared = try await other.subscribe(to: Ping.self, from: .only(room), after: beginning)
        #expect(unshared.gap == HistoryGap(code: .otherEpoch, missed: nil))
    }

    @Test("a hole in the table's numbers is told, in order, to a room's subscriptions that drop and tell")
    func holesAreToldInOrder() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        mailroom._route(Ping.self, through: { _ in true })
        let plain = await mailroom.subscribe(to: Ping.self, from: .only(room), backlog: .droppingOldest(past: 10))
        let everyRoom = await mailroom.subscribe(to: Ping.self, backlog: .droppingNewest(past: 10))
        let anyRoom = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self, backlog: .droppingOldest(past: 10))
        let positioned = try await mailroom.subscribe(
            to: Ping.self,
            from: .only(room),
            after: nil,
            backlog: .droppingOldest(past: 10)
        )
        // The room had no mail here: the table's first row for it is number 3, so 1 and 2 never came.
        mailroom._postPositioned(contentsOf: pings(3...3), from: room, epoch: tableEpoch, first: 3, live: true)
        mailroom._postPositioned(contentsOf: pings(4...4), from: room, epoch: tableEpoch, first: 4, live: true)
        // Rows 5 to 7 deleted before they were read.
        mailroom._postPositioned(contentsOf: pings(8...8), from: room, epoch: tableEpoch, first: 8, live: true)
        let missed = { (count: Int) in MailLoss(code: .missed, count: count) }
        #expect(try await plain.first(5).map { $0.mail?.id ?? -($0.loss?.count ?? 0) } == [-2, 3, 4, -3, 8])
        #expect(try await everyRoom.first(5).compactMap(\.loss) == [missed(2), missed(3)])
        #expect(try await anyRoom.first(5).compactMap(\.loss) == [missed(2), missed(3)])
        let heard = try await positioned.mail.first(5)
        #expect(heard.compactMap(\.loss) == [missed(2), missed(3)])
        #expect(heard.compactMap(\.mail?.position.sequence) == [3, 4, 8])
        // A row read twice is no hole.
        mailroom._postPositioned(contentsOf: pings(8...9), from: room, epoch: tableEpoch, first: 8, live: true)
        #expect(try await plain.first(1).map(\.mail?.id) == [9])
    }

    @Test(
        "a relay that moves a room on past rows it never read tells the hole at once; moving on at its start does not"
    )
    func movingOnTellsTheHole() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        mailroom._route(Ping.self, through: { _ in true })
        let heard = await mailroom.subscribe(to: Ping.self, from: .only(room), backlog: .droppingOldest(past: 10))
        // As a relay starts: the room, unnumbered here, moves on to the table's numbers, no loss.
        mailroom._postPositioned(contentsOf: [Ping](), from: room, epoch: tableEpoch, first: 5, live: true)
        mailroom._postPositioned(contentsOf: pings(5...5), from: room, epoch: tableEpoch, first: 5, live: true)
        // Coming back after a disconnect: rows 6 to 9 went with the retention meanwhile.
        mailroom._postPositioned(contentsOf: [Ping](), from: room, epoch: tableEpoch, first: 10, live: true)
        let firstTwo = try await heard.first(2)
        #expect(firstTwo == [.mail(Ping(id: 5)), .lost(MailLoss(code: .missed, count: 4))], "\(firstTwo)")
        mailroom._postPositioned(contentsOf: pings(10...10), from: room, epoch: tableEpoch, first: 10, live: true)
        #expect(try await heard.first(1) == [.mail(Ping(id: 10))])
    }
}
