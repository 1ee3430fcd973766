import AsyncMail
import AsyncMailTesting
import Synchronization
import TestSupport
import Testing

@testable import AsyncMail

/// The trace a test runs in: what ``Tracing`` captures at post and restores around handlers.
enum Trace {
    @TaskLocal static var id: String?
}

/// A ``MailroomInstrumentation`` that records every call and carries ``Trace/id`` as its context:
/// the core's side of the contract, which AsyncMailObservability fills with swift-metrics and
/// ServiceContext (tested in its own package).
final class Tracing: MailroomInstrumentation {
    struct Posted: Equatable {
        let type: String
        let mails: Int
        let receipt: Receipt
    }

    let posts = Locked<[Posted]>([])
    /// Live subscriptions by mail type, from the start and end calls.
    let live = Locked<[String: Int]>([:])
    let starts = Atomic(0)

    func currentContext() -> PostContext { PostContext(Trace.id) }

    nonisolated(nonsending) func withContext(
        _ context: PostContext,
        _ body: nonisolated(nonsending) () async -> Void
    ) async {
        await Trace.$id.withValue(context.value as? String) { await body() }
    }

    func didPost(_ type: any Mail.Type, mails: Int, receipt: Receipt) {
        posts.withLock { $0.append(Posted(type: "\(type)", mails: mails, receipt: receipt)) }
    }

    func subscriptionStarted(_ type: any Mail.Type) {
        starts.add(1, ordering: .relaxed)
        live.withLock { $0["\(type)", default: 0] += 1 }
    }

    func subscriptionEnded(_ type: any Mail.Type) {
        live.withLock { $0["\(type)", default: 0] -= 1 }
    }

    func liveCount(_ type: any Mail.Type) -> Int { live.withLock { $0["\(type)", default: 0] } }
}

/// Records what a handler saw: each mail's id with the trace it ran in.
actor HandlerLog {
    private(set) var calls: [(id: Int, trace: String?)] = []
    func record(_ id: Int) { calls.append((id, Trace.id)) }
    var traces: [String?] { calls.map(\.trace) }
}

@Suite("Instrumentation: receipts, subscription counts and the poster's context")
struct InstrumentationTests {
    @Test("every post reports its type, its mail count and its receipt, after delivery")
    func postsAreReported() async {
        let tracing = Tracing()
        let mailroom = Mailroom(instrumentation: tracing)
        let pings = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(1))
        await mailroom.post(Ping(id: 1))
        await mailroom.post(Ping(id: 2))  // the buffer is full: dropped
        await mailroom.post(contentsOf: [Pong(id: 1), Pong(id: 2)], from: RoomID("lobby"))
        await mailroom.post(Ping(id: 3), from: Player("ada"))
        #expect(
            tracing.posts.withLock { $0 }
                == [
                    .init(type: "Ping", mails: 1, receipt: Receipt(delivered: 1)),
                    .init(type: "Ping", mails: 1, receipt: Receipt(dropped: 1)),
                    .init(type: "Pong", mails: 2, receipt: Receipt()),
                    .init(type: "Ping", mails: 1, receipt: Receipt(dropped: 1)),
                ]
        )
        _ = pings
    }

    @Test("a started subscription is ended exactly once, whichever way it ends; taps are not counted")
    func subscriptionsBalance() async throws {
        let tracing = Tracing()
        let mailroom = Mailroom(instrumentation: tracing)
        // Dropped without being iterated.
        do { _ = await mailroom.subscribe(to: Ping.self) }
        #expect(tracing.liveCount(Ping.self) == 0)
        // Cancelled while iterating.
        let pings = await mailroom.subscribe(to: Ping.self)
        let consumer = Task { for await _ in pings {} }
        #expect(tracing.liveCount(Ping.self) == 1)
        consumer.cancel()
        await consumer.value
        #expect(tracing.liveCount(Ping.self) == 0)
        // Ended by its backlog limit.
        let bounded = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 0))
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(ended: 1))
        #expect(tracing.liveCount(Ping.self) == 0)
        _ = bounded
        // Pinned to an object that goes away.
        var player: Player? = Player("ada")
        let pinned = await mailroom.subscribe(to: Pong.self, from: .only(player))
        #expect(tracing.liveCount(Pong.self) == 1)
        player = nil
        #expect(await mailroom.subscriberCount(Pong.self) == 0)
        #expect(tracing.liveCount(Pong.self) == 0)
        _ = pinned
        // An observation, cancelled.
        let owner = Recorder()
        let observation = await mailroom.observe(Ping.self, owner: owner) { _, _ in }
        #expect(tracing.liveCount(Ping.self) == 1)
        observation.cancel()
        #expect(tracing.liveCount(Ping.self) == 0)
        // A tap is not a subscription to a type.
        let startsBeforeTap = tracing.starts.load(ordering: .relaxed)
        let tap = await mailroom.tap()
        #expect(tracing.starts.load(ordering: .relaxed) == startsBeforeTap)
        // Closing ends the rest, and a subscription made afterwards is started and ended at once.
        let kept = [await mailroom.subscribe(to: Numbered.self), await mailroom.subscribe(to: Numbered.self)]
        #expect(tracing.liveCount(Numbered.self) == 2)
        await mailroom.close()
        _ = await mailroom.subscribe(to: Numbered.self)
        #expect(tracing.liveCount(Numbered.self) == 0)
        #expect(tracing.live.withLock { $0.values.allSatisfy { $0 == 0 } })
        _ = (kept, tap)
    }

    @Test("an observe handler runs inside the context its mail was posted in")
    func observeHandlersRunInTheirPostContext() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let seen = HandlerLog()
        let observation = await Trace.$id.withValue("observer's own") {
            await mailroom.observe(Ping.self, owner: seen) { seen, ping in await seen.record(ping.id) }
        }
        await Trace.$id.withValue("a") { await mailroom.post(Ping(id: 1)) }
        await mailroom.post(Ping(id: 2))
        await Trace.$id.withValue("c") { await mailroom.post(contentsOf: [Ping(id: 3), Ping(id: 4)]) }
        try await withTimeout { await observation.waitUntilHandled() }
        #expect(await seen.traces == ["a", nil, "c", "c"])
        // Every context was taken with its mail: nothing waits beside an empty buffer.
        observation.cancel()
    }

    @Test("a dropping .bufferingOldest buffer keeps each mail with its own context")
    func droppedMailTakesItsContextBack() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let seen = HandlerLog()
        let gate = AsyncStream.makeStream(of: Void.self)
        let handled = AsyncStream.makeStream(of: Int.self)
        _ = await mailroom.observe(Ping.self, owner: seen, bufferingPolicy: .bufferingOldest(1)) { seen, ping in
            await seen.record(ping.id)
            handled.continuation.yield(ping.id)
            if ping.id == 1 { for await _ in gate.stream { break } }
        }
        await Trace.$id.withValue("t1") { await mailroom.post(Ping(id: 1)) }
        #expect(try await handled.stream.first(1).first == 1)
        await Trace.$id.withValue("t2") { await mailroom.post(Ping(id: 2)) }  // buffered
        #expect(await Trace.$id.withValue("t3") { await mailroom.post(Ping(id: 3)) } == Receipt(dropped: 1))
        #expect(await Trace.$id.withValue("t4") { await mailroom.post(Ping(id: 4)) } == Receipt(dropped: 1))
        gate.continuation.yield()
        #expect(try await handled.stream.first(1).first == 2)
        await Trace.$id.withValue("t5") { await mailroom.post(Ping(id: 5)) }
        #expect(try await handled.stream.first(1).first == 5)
        let calls = await seen.calls
        #expect(calls.map(\.id) == [1, 2, 5])
        #expect(calls.map(\.trace) == ["t1", "t2", "t5"])
    }

    @Test("serve delivers each mail inside its post's context")
    func serveDeliversInThePostContext() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 16))
        let written = Locked<[String?]>([])
        let done = AsyncStream.makeStream(of: Void.self)
        let server = Task {
            await inbox.serve { ping in
                written.withLock { $0.append(Trace.id) }
                if ping.id == 3 { done.continuation.yield() }
            } receiving: {
                try await Task.sleep(for: .seconds(3_600))  // a client that never leaves; cancelled below
            }
        }
        await Trace.$id.withValue("x") { await mailroom.post(Ping(id: 1)) }
        await mailroom.post(Ping(id: 2))
        await Trace.$id.withValue("z") { await mailroom.post(Ping(id: 3)) }
        _ = try await done.stream.first(1)
        #expect(written.withLock { $0 } == ["x", nil, "z"])
        server.cancel()
        let end = await server.value
        #expect(end.code == .cancelled, "serve ended otherwise than by cancellation: \(end)")
    }

    @Test("a for-await loop gets each mail's context from withContexts; replayed mail has none")
    func forAwaitGetsTheContext() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        await mailroom.retainLatest(Ping.self)
        await Trace.$id.withValue("old") { await mailroom.post(Ping(id: 0)) }
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 16), startingWithLatest: true)
        await Trace.$id.withValue("p1") { await mailroom.post(Ping(id: 1)) }
        await mailroom.post(Ping(id: 2))
        let deliveries = try await inbox.withContexts.first(3)
        #expect(deliveries.map(\.mail.id) == [0, 1, 2])
        #expect(deliveries.map { $0.context.value as? String } == [nil, "p1", nil])
    }

    @Test("a plain bounded loop takes the contexts too, so none are left behind its buffer")
    func plainBoundedLoopStaysAligned() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 1_000))
        for id in 0..<500 { await Trace.$id.withValue("\(id)") { await mailroom.post(Ping(id: id)) } }
        let contexts = try #require(inbox.contexts)
        #expect(contexts.count == 500)
        var iterator = inbox.makeAsyncIterator()
        for _ in 0..<499 { _ = try await iterator.next() }
        #expect(contexts.count == 1)
        #expect(try await iterator.next()?.id == 499)
        #expect(iterator.context.value as? String == "499")
        #expect(contexts.count == 0)
    }

    @Test("a tap sees each post's context")
    func tapsSeeTheContext() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let tap = await mailroom.tap()
        await Trace.$id.withValue("t") { await mailroom.post(Ping(id: 1)) }
        let posted = try await tap.first(1)
        #expect(posted.map { $0.context.value as? String } == ["t"])
    }

    @Test("a bounded tap keeps each mail with its own context while posts that share no lane race to it")
    func tapContextsStayAlignedUnderRacingPosts() async throws {
        let mailroom = Mailroom(instrumentation: Tracing())
        let posters = 4
        let postsEach = scaled(5_000)
        let tap = await mailroom.tap(backlog: .ending(past: posters * postsEach))
        // One room per poster, each with a subscriber: the posts hold different lanes.
        var rooms: [AsyncStream<Ping>] = []
        for poster in 0..<posters {
            rooms.append(await mailroom.subscribe(to: Ping.self, from: .only(RoomID("room \(poster)"))))
        }
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<posters {
                group.addTask {
                    for index in 0..<postsEach {
                        let id = poster * 1_000_000 + index
                        await Trace.$id.withValue("\(id)") {
                            await mailroom.post(Ping(id: id), from: RoomID("room \(poster)"))
                        }
                    }
                }
            }
        }
        let deliveries = try await tap.withContexts.first(posters * postsEach)
        let misplaced = deliveries.filter { delivery in
            delivery.context.value as? String != delivery.mail.mail(as: Ping.self).map { "\($0.id)" }
        }
        #expect(misplaced.count == 0, "mails that came with another mail's context")
        withExtendedLifetime(rooms) {}
    }

    @Test("without instrumentation nothing is kept beside a buffer and every context is none")
    func uninstrumentedCarriesNothing() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 4))
        #expect(inbox.contexts == nil)
        await Trace.$id.withValue("unseen") { await mailroom.post(Ping(id: 1)) }
        let delivery = try await inbox.withContexts.first(1)
        #expect(delivery.first?.context.value == nil)
    }
}
