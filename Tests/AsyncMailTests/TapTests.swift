import AsyncMail
import Testing

@testable import AsyncMail

@Suite("Tap on everything")
struct TapTests {
    @Test("a tap sees every type and sender, in the order subscribers see")
    func seesEverything() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let tap = await mailroom.tap()
        let pings = await mailroom.subscribe(to: Ping.self)

        await mailroom.post(Ping(id: 1))
        await mailroom.post(Pong(id: 2), from: alice)
        await mailroom.post(Ping(id: 3), from: RoomID("lobby"))

        let seen = try await tap.first(3)
        #expect(
            seen.map(\.typeName) == [
                String(reflecting: Ping.self), String(reflecting: Pong.self), String(reflecting: Ping.self),
            ]
        )
        #expect(seen[0].mail(as: Ping.self) == Ping(id: 1))
        #expect(seen[1].mail(as: Pong.self) == Pong(id: 2))
        #expect(seen[1].mail(as: Ping.self) == nil)
        #expect(seen[0].sender == nil)
        #expect((seen[1].sender as? Player) === alice)
        #expect((seen[2].sender as? RoomID) == RoomID("lobby"))
        #expect(try await pings.first(2).map(\.id) == [1, 3])
    }

    @Test("taps are not counted: a post nobody subscribed to still reads as unheard")
    func notCounted() async throws {
        let mailroom = Mailroom()
        let tap = await mailroom.tap()
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(try await tap.first(1).count == 1, "yet the tap saw it")
    }

    @Test("a tap can filter, and ends like any subscription")
    func filtersAndEnds() async throws {
        let mailroom = Mailroom()
        let onlyPongs = await mailroom.tap(where: { $0.mail(as: Pong.self) != nil })
        let consumer = Task { await onlyPongs.untimedCollect().compactMap { $0.mail(as: Pong.self)?.id } }
        await mailroom.post(Ping(id: 1))
        await mailroom.post(Pong(id: 2))
        await mailroom.close()
        #expect(try await withTimeout { await consumer.value } == [2])
        #expect(try await mailroom.tap().collect().isEmpty, "closed")
    }

    @Test("cancelling a tap's consumer removes it at once")
    func cancelRemoves() async throws {
        let mailroom = Mailroom()
        let tap = await mailroom.tap(bufferingPolicy: .bufferingOldest(0))
        let consumer = Task { for await _ in tap {} }
        #expect(await mailroom.tapCount == 1)
        consumer.cancel()
        await consumer.value
        #expect(await mailroom.tapCount == 0)
        _ = await mailroom.tap()  // dropped at once
        #expect(await mailroom.tapCount == 0)
    }

    @Test("a tap sees where each post ends, so a batch can be forwarded as one")
    func batchBoundaries() async throws {
        let mailroom = Mailroom()
        let tap = await mailroom.tap()
        await mailroom.post(Ping(id: 0))
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])
        await mailroom.post(contentsOf: [Ping(id: 4)], from: RoomID("lobby"))
        await mailroom.post(contentsOf: [Ping(id: 5), Ping(id: 6)], from: Optional(RoomID("lobby")))
        let seen = try await tap.first(7)
        #expect(seen.map(\.isLastInPost) == [true, false, false, true, true, false, true])
        #expect(seen.compactMap { $0.mail(as: Ping.self)?.id } == Array(0...6))
    }

    @Test("a batch reaches a tap whole, even while posts that share no lane race it")
    func batchesStayWhole() async throws {
        let mailroom = Mailroom()
        let tap = await mailroom.tap()
        // Two rooms and a second type: no lane orders these posts against each other.
        let posts = 400
        let batch = 8
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<3 {
                group.addTask {
                    for post in 0..<posts {
                        let ids = (0..<batch).map { poster * 1_000_000 + post * batch + $0 }
                        switch poster {
                        case 0: await mailroom.post(contentsOf: ids.map(Ping.init), from: RoomID("a"))
                        case 1: await mailroom.post(contentsOf: ids.map(Ping.init), from: RoomID("b"))
                        default: await mailroom.post(contentsOf: ids.map(Pong.init))
                        }
                    }
                }
            }
        }
        let seen = try await tap.first(3 * posts * batch)
        // Every run of `batch` mails is one post: one poster, in order, ending its post last.
        for start in stride(from: 0, to: seen.count, by: batch) {
            let run = seen[start..<(start + batch)]
            let ids = run.map { $0.mail(as: Ping.self)?.id ?? $0.mail(as: Pong.self)!.id }
            let whole =
                ids == Array(ids[0]..<(ids[0] + batch))
                && run.map(\.isLastInPost) == Array(repeating: false, count: batch - 1) + [true]
            guard whole else {
                Issue.record("mails of two posts interleaved at \(start): \(ids)")
                return
            }
        }
    }

    @Test("a tap with a backlog limit ends when it falls behind, uncounted, and its loop says why")
    func tapBacklogLimit() async throws {
        let mailroom = Mailroom()
        let tap = await mailroom.tap(backlog: .ending(past: 2))
        let pings = await mailroom.subscribe(to: Ping.self)
        #expect(await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)]) == Receipt(delivered: 2))
        #expect(await mailroom.post(Ping(id: 3)) == Receipt(delivered: 1), "taps are never counted, ended or not")
        #expect(tap.backlogLimit == 2)
        await #expect(throws: BacklogLimitExceeded.self) {
            for try await _ in tap {}
        }
        #expect(await mailroom.post(Ping(id: 4)) == Receipt(delivered: 1))
        #expect(try await pings.first(4).map(\.id) == [1, 2, 3, 4])
    }
}
