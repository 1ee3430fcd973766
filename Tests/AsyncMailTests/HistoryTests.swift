import AsyncMailTesting
import Synchronization
import Testing

@testable import AsyncMail

/// The positions of `mails`, for comparing with what a history holds.
private func sequences(_ mails: [Positioned<Ping>]) -> [UInt64] { mails.map(\.position.sequence) }

@Suite("History and positions: resuming after the last mail seen")
struct HistoryTests {
    @Test("every mail of a history-keeping type has a position; a resume gets what is kept after it, then live mail")
    func resumeAfterAPosition() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 100)
        let live = try await mailroom.subscribe(to: Ping.self, after: nil)
        #expect(live.gap == nil)
        for id in 1...5 { await mailroom.post(Ping(id: id)) }
        let seen = try await live.mail.first(5)
        #expect(seen.map(\.mail.id) == [1, 2, 3, 4, 5])
        #expect(sequences(seen) == [1, 2, 3, 4, 5])
        #expect(Set(seen.map(\.position.epoch)).count == 1)

        let resumed = try await mailroom.subscribe(to: Ping.self, after: seen[1].position)
        #expect(resumed.gap == nil)
        await mailroom.post(Ping(id: 6))
        #expect(try await resumed.mail.first(4).map(\.mail.id) == [3, 4, 5, 6], "kept after 2, then live")
        #expect(try await live.mail.first(1).map(\.mail.id) == [6])
    }

    @Test("a gap's words: '1 mail after the position is', '2 mails after the position are', unknown counts")
    func gapDescriptions() {
        #expect(HistoryGap(code: .expired, missed: 1).description == "1 mail after the position is no longer kept")
        #expect(HistoryGap(code: .expired, missed: 2).description == "2 mails after the position are no longer kept")
        #expect(HistoryGap(code: .expired, missed: nil).description.hasPrefix("an unknown number of mails"))
        #expect(
            HistoryGap(code: .otherEpoch, missed: 1).description == "the position is of another epoch: 1 mail missed"
        )
    }

    @Test("a position older than what is kept: the gap first, with the exact count, then what is kept")
    func expiredPosition() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 3)
        let live = try await mailroom.subscribe(to: Ping.self, after: nil)
        for id in 1...10 { await mailroom.post(Ping(id: id)) }
        let first = try await live.mail.first(10)[0].position  // mail 1; 8, 9, 10 are kept
        let resumed = try await mailroom.subscribe(to: Ping.self, after: first)
        #expect(resumed.gap == HistoryGap(code: .expired, missed: 6), "mails 2 to 7 are gone")
        #expect(try await resumed.mail.first(3).map(\.mail.id) == [8, 9, 10])
    }

    @Test("maxAge: mail older than it is no longer kept, and a resume before it is told the exact count")
    func maxAgeExpires() async throws {
        let mailroom = Mailroom()
        // Any mail is older than a nanosecond by the time the resume reads the history.
        await mailroom.retainHistory(Ping.self, maxAge: .nanoseconds(1))
        let live = try await mailroom.subscribe(to: Ping.self, after: nil)
        for id in 1...3 { await mailroom.post(Ping(id: id)) }
        let first = try await live.mail.first(3)[0].position
        let resumed = try await mailroom.subscribe(to: Ping.self, after: first)
        #expect(resumed.gap == HistoryGap(code: .expired, missed: 2), "mails 2 and 3 aged out")
        await mailroom.post(Ping(id: 4))
        #expect(try await resumed.mail.first(1).map(\.mail.id) == [4], "then live mail")

        // Age is checked when the history is touched (a post, a resume, new limits), so 4, still
        // kept when the limits were raised, stays kept under them.
        await mailroom.retainHistory(Ping.self, count: 10, maxAge: .seconds(3_600))
        await mailroom.post(Ping(id: 5))
        let again = try await mailroom.subscribe(to: Ping.self, after: first)
        #expect(again.gap == HistoryGap(code: .expired, missed: 2), "2 and 3 are gone")
        #expect(try await again.mail.first(2).map(\.mail.id) == [4, 5])
    }

    @Test("a position from another mailroom, or from before a restart: a gap of unknown size, then live mail")
    func otherEpoch() async throws {
        let (before, after) = (Mailroom(), Mailroom())
        await before.retainHistory(Ping.self, count: 10)
        await after.retainHistory(Ping.self, count: 10)
        let old = try await before.subscribe(to: Ping.self, after: nil)
        await before.post(Ping(id: 1))
        let position = try await old.mail.first(1)[0].position
        await after.post(Ping(id: 2))
        let resumed = try await after.subscribe(to: Ping.self, after: position)
        #expect(resumed.gap == HistoryGap(code: .otherEpoch, missed: nil))
        await after.post(Ping(id: 3))
        #expect(try await resumed.mail.first(1).map(\.mail.id) == [3], "live only: nothing is known to be after it")
    }

    @Test("positions no mail of this history had are refused, typed, and nothing else is disturbed")
    func refusedPositions() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        await mailroom.retainHistory(Pong.self, count: 10)
        let pongs = try await mailroom.subscribe(to: Pong.self, after: nil)
        await mailroom.post(Pong(id: 1))
        let pong = try await pongs.mail.first(1)[0].position
        await #expect(throws: PositionError.otherMailType) {
            _ = try await mailroom.subscribe(to: Ping.self, after: pong)
        }
        let forged = MailPosition(
            epoch: pong.epoch,
            stream: RoomDigest.fnv1a(String(reflecting: Ping.self)),
            room: .max,
            sequence: 99
        )
        await #expect(throws: PositionError.notYetPosted(99, newest: 0)) {
            _ = try await mailroom.subscribe(to: Ping.self, after: forged)
        }
        await #expect(throws: PositionError.noHistory("Numbered")) {
            _ = try await mailroom.subscribe(to: Numbered.self, after: nil)
        }
        #expect(await mailroom.post(Pong(id: 2)) == Receipt(delivered: 1), "the refusals left the live subscription")
    }

    @Test("from: and where: filter the kept mail and the live mail alike; the count includes positioned subscriptions")
    func filtersAndCounts() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let (lobby, hall) = (RoomID("lobby"), RoomID("hall"))
        let player = Player("ada")
        let probe = try await mailroom.subscribe(to: Ping.self, after: nil)
        for id in 1...4 { await mailroom.post(Ping(id: id), from: id.isMultiple(of: 2) ? lobby : hall) }
        await mailroom.post(Ping(id: 5), from: player)
        let start = try await probe.mail.first(1)[0].position
        // Positions are per room: a room's subscription starts with all it keeps, the rest after the type's position.
        let inLobby = try await mailroom.subscribe(to: Ping.self, from: .only(lobby), after: .oldestKept)
        let fromPlayer = try await mailroom.subscribe(to: Ping.self, from: .only(player), after: .oldestKept)
        let large = try await mailroom.subscribe(to: Ping.self, after: start, where: { $0.id >= 4 })
        #expect(await mailroom.subscriberCount(Ping.self) == 4, "three resumed, and the probe")
        #expect(
            await mailroom.subscriberCount(Ping.self, from: .only(lobby)) == 3,
            "the lobby's own and the two that hear every room: whom a post to the lobby reaches"
        )
        #expect(
            await mailroom.post(Ping(id: 6), from: lobby) == Receipt(delivered: 3),
            "the probe, the lobby's, the large"
        )
        withExtendedLifetime(probe) {}
        #expect(try await inLobby.mail.first(3).map(\.mail.id) == [2, 4, 6])
        #expect(try await fromPlayer.mail.first(1).map(\.mail.id) == [5])
        #expect(try await large.mail.first(3).map(\.mail.id) == [4, 5, 6])
        await mailroom.close()
        #expect(try await inLobby.mail.collect().isEmpty, "close ends it")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        withExtendedLifetime(player) {}
    }

    @Test("a history type's posts reach taps and ordinary subscriptions; batches get consecutive positions")
    func tapsAndBatches() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let tap = await mailroom.tap()
        let plain = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        let positioned = try await mailroom.subscribe(to: Ping.self, after: nil)
        #expect(
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)], from: RoomID("lobby")) == Receipt(delivered: 4)
        )
        #expect(mailroom.postSynchronously(Ping(id: 3)) == Receipt(delivered: 1))
        #expect(try await positioned.mail.first(3).map(\.position.sequence) == [1, 2, 3])
        #expect(try await plain.first(2).map(\.id) == [1, 2])
        #expect(try await tap.first(3).compactMap { $0.mail(as: Ping.self)?.id } == [1, 2, 3])
    }

    @Test(
        "a post from inside a replay's or a delivery's filter is deferred, takes the next position, and never deadlocks"
    )
    func reentrantPosts() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let watcher = try await mailroom.subscribe(to: Ping.self, after: nil)
        await mailroom.post(Ping(id: 1))
        let start = try await watcher.mail.first(1)[0].position
        await mailroom.post(Ping(id: 2))
        // The filter posts while the replay of 2 runs (holding the type's order), and again live.
        let echoing = try await mailroom.subscribe(to: Ping.self, after: start) { ping in
            if ping.id < 10 { mailroom.postSynchronously(Ping(id: ping.id * 10)) }
            return true
        }
        #expect(try await echoing.mail.first(2).map(\.mail.id) == [2, 20], "the replay, then the post its filter made")
        #expect(try await watcher.mail.first(2).map(\.position.sequence) == [2, 3])
    }

    @Test("a subscription with positions pinned to an object ends once the object has gone, as any pinned one does")
    func departedObjectSender() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        var player: Player? = Player("ada")
        let pinned = try await mailroom.subscribe(to: Ping.self, from: .only(player!), after: nil)
        await mailroom.post(Ping(id: 1), from: player!)
        #expect(try await pinned.mail.first(1).map(\.mail.id) == [1])
        player = nil
        #expect(await mailroom.subscriberCount(Ping.self) == 0, "the count ends it")
        #expect(try await pinned.mail.collect().isEmpty, "and its stream finishes")
    }

    @Test("posts racing resumes: every resume gets each later mail once, in order, with no gap")
    func resumesRacingPosts() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10_000)
        let total = 2_000
        let resumers = 16
        let (probing, resumed) = (Locked(0), Locked(0))
        try await withThrowingTaskGroup(of: (after: UInt64?, got: [UInt64])?.self) { group in
            for poster in 0..<2 {
                group.addTask {
                    // Every resumer's probe is live first, so each probe hears the posts it waits for.
                    try await waitUntil { probing.withLock { $0 } == resumers }
                    for index in 0..<(total / 2) { await mailroom.post(Ping(id: poster * total + index)) }
                    return nil
                }
            }
            for resumer in 0..<resumers {
                group.addTask {
                    // Resume after a position seen so far (or live), while the posters go on.
                    let probe = try await mailroom.subscribe(to: Ping.self, after: nil)
                    probing.withLock { $0 += 1 }
                    let seen = try await probe.mail.first(resumer * 50 + 1)
                    let after = resumer.isMultiple(of: 3) ? nil : seen.last?.position
                    let resumption = try await mailroom.subscribe(to: Ping.self, after: after)
                    resumed.withLock { $0 += 1 }
                    #expect(resumption.gap == nil)
                    var got: [UInt64] = []
                    for await mail in resumption.mail { got.append(mail.position.sequence) }  // until close
                    return (after?.sequence, got)
                }
            }
            var posters = 0
            while let result = try await group.next() {
                guard let (after, got) = result else {
                    posters += 1
                    if posters == 2 {
                        try await waitUntil { resumed.withLock { $0 } == resumers }
                        await mailroom.close()
                    }
                    continue
                }
                if let after {
                    #expect(
                        got == Array((after + 1)...UInt64(total)),
                        "each later mail once, in order, right after the position"
                    )
                } else if let first = got.first {
                    #expect(got == Array(first...UInt64(total)), "live: each mail from its first once, in order")
                }
            }
        }
    }
}
