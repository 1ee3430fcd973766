import AsyncMail
import Testing

@testable import AsyncMail

@Suite("Cancellation removes the subscription, deterministically")
struct CancellationTests {
    @Test("cancelling the consuming task mid-stream removes it by the time its loop has exited")
    func cancelConsumer() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let (progress, report) = AsyncStream.makeStream(of: Ping.self)
        let consumer = Task {
            for await ping in pings { report.yield(ping) }
        }
        await mailroom.post(Ping(id: 1))
        // The consumer is really iterating: it has handed back the first mail.
        #expect(try await progress.first(1) == [Ping(id: 1)])
        #expect(await mailroom.subscriberCount(Ping.self) == 1)

        consumer.cancel()
        try await withTimeout { await consumer.value }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.routeTableCount == 0)
    }

    @Test("a stream dropped without ever being iterated is removed at once")
    func droppedStream() async {
        let mailroom = Mailroom()
        _ = await mailroom.subscribe(to: Ping.self)
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        do {
            let pinned = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
            let typed = await mailroom.subscribe(to: Ping.self, fromAny: Player.self)
            #expect(await mailroom.subscriberCount(Ping.self) == 2)
            withExtendedLifetime((pinned, typed)) {}
        }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
    }

    @Test("breaking out of the loop in a task removes the subscription when the task ends")
    func breakOut() async throws {
        let mailroom = Mailroom()
        let (ready, signal) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            let pings = await mailroom.subscribe(to: Ping.self)
            signal.yield()
            for await ping in pings where ping.id == 2 { break }
        }
        _ = try await ready.first(1)
        await mailroom.post(Ping(id: 1))
        await mailroom.post(Ping(id: 2))
        try await withTimeout { await consumer.value }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("cancelling a task group of consumers removes every one of them", arguments: [1, 10, 250])
    func cancelTaskGroup(consumers: Int) async throws {
        let mailroom = Mailroom()
        let owner = Player("owner")
        var streams: [AsyncStream<Ping>] = []
        for index in 0..<consumers {
            switch index % 3 {
            case 0: streams.append(await mailroom.subscribe(to: Ping.self))
            case 1: streams.append(await mailroom.subscribe(to: Ping.self, from: .only(owner)))
            default: streams.append(await mailroom.subscribe(to: Ping.self, from: .only(RoomID("r\(index)"))))
            }
        }
        #expect(await mailroom.subscriberCount(Ping.self) == consumers)
        let group = Task { [streams] in
            await withTaskGroup(of: Void.self) { group in
                for stream in streams {
                    group.addTask { for await _ in stream {} }
                }
            }
        }
        streams.removeAll()
        await mailroom.post(Ping(id: 1), from: owner)
        group.cancel()
        try await withTimeout { await group.value }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.routeTableCount == 0)
    }

    @Test("hundreds of subscribe / cancel cycles leave nothing behind")
    func churn() async throws {
        let mailroom = Mailroom()
        let player = Player("p")
        for cycle in 0..<400 {
            let stream: AsyncStream<Ping>
            switch cycle % 3 {
            case 0: stream = await mailroom.subscribe(to: Ping.self)
            case 1: stream = await mailroom.subscribe(to: Ping.self, from: .only(player))
            default: stream = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("room")))
            }
            let consumer = Task { for await _ in stream {} }
            await mailroom.post(Ping(id: cycle), from: player)
            consumer.cancel()
            try await withTimeout { await consumer.value }
            #expect(await mailroom.subscriberCount(Ping.self) == 0)
        }
        #expect(await mailroom.routeTableCount == 0)
    }

    @Test("concurrent posters and churning subscribers: every loop ends and nothing is left")
    func churnUnderConcurrentPosts() async throws {
        let mailroom = Mailroom()
        // A hang guard for a whole workload, which takes ten seconds on a loaded machine under TSan.
        try await withTimeout(.seconds(180)) {
            await withTaskGroup(of: Void.self) { group in
                for poster in 0..<4 {
                    group.addTask {
                        for sequence in 0..<2_000 {
                            await mailroom.post(Numbered(poster: poster, sequence: sequence))
                        }
                    }
                }
                for _ in 0..<4 {
                    group.addTask {
                        for _ in 0..<100 {
                            let stream = await mailroom.subscribe(to: Numbered.self)
                            let consumer = Task { for await _ in stream {} }
                            consumer.cancel()
                            await consumer.value
                        }
                    }
                }
            }
        }
        #expect(await mailroom.subscriberCount(Numbered.self) == 0)
        #expect(await mailroom.routeTableCount == 0)
    }
}
