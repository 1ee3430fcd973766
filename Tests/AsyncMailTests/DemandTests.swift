import AsyncMailTesting
import Synchronization
import TestSupport
import Testing

@testable import AsyncMail

/// Reads counts until one equals `expected`: a coalesced stream may skip the values between.
private func awaitCount(
    _ expected: Int,
    from counts: AsyncStream<Int>,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let reached = try await withTimeout(sourceLocation: sourceLocation) { () -> Bool in
        for await count in counts where count == expected { return true }
        return false
    }
    #expect(reached, "the counts ended before reaching \(expected)", sourceLocation: sourceLocation)
}

/// Subscriptions kept alive by tasks that share them.
private final class KeptStreams: Sendable {
    let streams = Locked<[AsyncStream<Ping>]>([])
}

@Suite("Demand: subscriber counts as a sequence, and work that runs only while someone listens")
struct DemandTests {
    @Test("the current count at once, then every change; the stream ends when the mailroom closes")
    func countsFollowSubscriptions() async throws {
        let mailroom = Mailroom()
        let early = await mailroom.subscribe(to: Ping.self)
        let counts = await mailroom.subscriberCounts(Ping.self)
        #expect(try await counts.first(1) == [1], "the current count, at once")
        var second: AsyncStream<Ping>? = await mailroom.subscribe(to: Ping.self)
        #expect(try await counts.first(1) == [2])
        _ = await mailroom.subscribe(to: Pong.self)  // another type: no change
        second = nil
        #expect(try await counts.first(1) == [1], "a dropped stream is counted out")
        _ = second
        withExtendedLifetime(early) {}
        await mailroom.close()
        #expect(try await counts.collect() == [])
        let afterClose = await mailroom.subscriberCounts(Ping.self)
        #expect(try await afterClose.collect() == [], "a closed mailroom's counts end at once")
    }

    @Test("narrowed like subscriberCount: one room, a sender type, and subscriptions with positions")
    func countsAreNarrowed() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 10)
        let lobby = RoomID("lobby")
        let inLobby = await mailroom.subscriberCounts(Ping.self, from: .only(lobby))
        let everyRoom = await mailroom.subscriberCounts(Ping.self, fromAny: RoomID.self)
        let all = await mailroom.subscriberCounts(Ping.self)
        #expect(try await inLobby.first(1) == [0])
        #expect(try await everyRoom.first(1) == [0])
        #expect(try await all.first(1) == [0])
        let kitchen = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("kitchen")))
        try await awaitCount(1, from: all)
        let lobbyLines = try await mailroom.subscribe(to: Ping.self, from: .only(lobby), after: nil)
        try await awaitCount(1, from: inLobby)
        try await awaitCount(2, from: all)
        let rooms = await mailroom.subscribe(to: Ping.self, fromAny: RoomID.self)
        try await awaitCount(1, from: everyRoom)
        try await awaitCount(3, from: all)
        #expect(await mailroom.subscriberCount(Ping.self) == 3)
        withExtendedLifetime((kitchen, lobbyLines, rooms)) {}
    }

    @Test("a burst of churn nobody reads costs one slot; the next read is the count as it is now")
    func churnCoalesces() async throws {
        let mailroom = Mailroom()
        let counts = await mailroom.subscriberCounts(Ping.self)
        var kept: [AsyncStream<Ping>] = []
        for index in 0..<1_000 {
            let stream = await mailroom.subscribe(to: Ping.self)
            if index.isMultiple(of: 10) { kept.append(stream) }
        }
        #expect(try await counts.first(1) == [100], "only the newest count was buffered")
        withExtendedLifetime(kept) {}
    }

    @Test("subscriptions racing from many tasks: the counts settle on the exact count")
    func racingChangesSettle() async throws {
        let mailroom = Mailroom()
        let counts = await mailroom.subscriberCounts(Ping.self, from: .only(RoomID("r")))
        let kept = KeptStreams()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<scaled(500) {
                        let stream = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("r")))
                        if (index + task).isMultiple(of: 50) { kept.streams.withLock { $0.append(stream) } }
                        await cooperate(after: index, every: 16)
                    }
                }
            }
        }
        let expected = kept.streams.withLock { $0.count }
        try await awaitCount(expected, from: counts)
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(RoomID("r"))) == expected)
        kept.streams.withLock { $0 = [] }
        try await awaitCount(0, from: counts)
    }

    @Test("random subscriptions and drops, against a model: each change yields exactly the new count", .tags(.model))
    func againstTheModel() async throws {
        for seed in modelSeeds {
            var random = SeededRandomNumberGenerator(seed: seed)
            let mailroom = Mailroom()
            let rooms = [RoomID("a"), RoomID("b")]
            let all = await mailroom.subscriberCounts(Ping.self)
            let inA = await mailroom.subscriberCounts(Ping.self, from: .only(rooms[0]))
            var live: [(room: Int?, stream: AsyncStream<Ping>)] = []
            #expect(try await all.first(1) == [0])
            #expect(try await inA.first(1) == [0])
            for _ in 0..<60 {
                // A post to room a reaches its own subscriptions and every-sender ones: the demand rule.
                let before = (live.count, live.filter { $0.room == 0 || $0.room == nil }.count)
                if live.isEmpty || Bool.random(using: &random) {
                    let room = Int.random(in: -1...1, using: &random)
                    if room < 0 {
                        live.append((nil, await mailroom.subscribe(to: Ping.self)))
                    } else {
                        live.append((room, await mailroom.subscribe(to: Ping.self, from: .only(rooms[room]))))
                    }
                } else {
                    live.remove(at: Int.random(in: 0..<live.count, using: &random))
                }
                // Each step is one change at most, made before it returns: a count that moved
                // yields exactly its new value, and one that did not yields nothing.
                let after = (live.count, live.filter { $0.room == 0 || $0.room == nil }.count)
                if after.0 != before.0 { #expect(try await all.first(1) == [after.0], "seed \(seed)") }
                if after.1 != before.1 { #expect(try await inA.first(1) == [after.1], "seed \(seed)") }
                #expect(await mailroom.subscriberCount(Ping.self) == after.0)
            }
        }
    }

    @Test("whileSubscribed: started by the first subscriber, cancelled after the last, started again; ends at close")
    func workRunsWhileSomeoneListens() async throws {
        let mailroom = Mailroom()
        let (runs, run) = AsyncStream.makeStream(of: String.self)
        let working = Task {
            await mailroom.whileSubscribed(to: Ping.self, from: .only(RoomID("r"))) {
                run.yield("started")
                defer { run.yield("stopped") }
                await untilCancelled()
            }
        }
        let elsewhere = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("s")))  // starts nothing
        var first: AsyncStream<Ping>? = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("r")))
        #expect(try await runs.first(1) == ["started"])
        var second: AsyncStream<Ping>? = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("r")))
        first = nil
        second = nil
        #expect(try await runs.first(1) == ["stopped"], "after the last, not the first, left")
        let again = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("r")))
        #expect(try await runs.first(1) == ["started"])
        await mailroom.close()
        #expect(try await runs.first(1) == ["stopped"])
        await working.value
        withExtendedLifetime((first, second, again, elsewhere)) {}
    }

    @Test("whileSubscribed returns when its task is cancelled, once the work has stopped")
    func workEndsWithItsTask() async throws {
        let mailroom = Mailroom()
        let stopped = Atomic(false)
        let (starts, start) = AsyncStream.makeStream(of: Void.self)
        let listening = await mailroom.subscribe(to: Ping.self)
        let working = Task {
            await mailroom.whileSubscribed(to: Ping.self) {
                start.yield()
                await untilCancelled()
                stopped.store(true, ordering: .releasing)
            }
        }
        _ = try await starts.first(1)
        working.cancel()
        await working.value
        let hasStopped = stopped.load(ordering: .acquiring)
        #expect(hasStopped, "the work was cancelled and had returned")
        withExtendedLifetime(listening) {}
    }
}
