import AsyncMail
import Synchronization
import Testing

@testable import AsyncMail

/// Records what an owner's handler saw, and whether calls ever overlapped.
actor Recorder {
    private(set) var seen: [Int] = []
    private(set) var overlapped = false
    private var running = false

    func handle(_ id: Int, pause: Bool) async {
        if running { overlapped = true }
        running = true
        if pause { await Task.yield() }
        seen.append(id)
        running = false
    }
}

@MainActor
final class Screen {
    var shown: [Int] = []
}

@Suite("Owner-bound observe")
struct ObserveTests {
    @Test("handlers run one at a time, in posting order, with the owner passed strongly")
    func orderedOneAtATime() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let observation = await mailroom.observe(Ping.self, owner: recorder) { recorder, ping in
            await recorder.handle(ping.id, pause: true)
        }
        // Live on return: posted before the handler task has even started.
        await mailroom.post(contentsOf: (0..<50).map(Ping.init(id:)))
        // A hang guard: fifty calls that each yield take seconds on a loaded machine under TSan.
        try await withTimeout(.seconds(120)) { await observation.waitUntilHandled() }
        #expect(await recorder.seen == Array(0..<50))
        #expect(await recorder.overlapped == false)
    }

    @Test("waitUntilHandled: at once with nothing posted or filtered out, after the handler's calls, and when it ends")
    func waitUntilHandled() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let (entered, enter) = AsyncStream.makeStream(of: Int.self)
        let notThree: @Sendable (Ping) -> Bool = { $0.id != 3 }
        let observation = await mailroom.observe(Ping.self, owner: recorder, where: notThree) { recorder, ping in
            enter.yield(ping.id)
            if ping.id == 2 { for await _ in gate { break } }  // hold this call until told
            await recorder.handle(ping.id, pause: false)
        }
        try await withTimeout { await observation.waitUntilHandled() }  // nothing posted yet
        await mailroom.post(Ping(id: 1))
        try await withTimeout { await observation.waitUntilHandled() }
        #expect(await recorder.seen == [1], "the handler has run for everything posted before the wait")
        await mailroom.post(Ping(id: 3))  // filtered out: never handled, never waited for
        try await withTimeout { await observation.waitUntilHandled() }
        await mailroom.post(Ping(id: 2))
        let waiting = Task { await observation.waitUntilHandled() }
        #expect(await mailroom.post(Ping(id: 4)) == Receipt(delivered: 1))
        #expect(try await entered.first(2) == [1, 2], "the call for 2 is in progress")
        observation.cancel()  // 4 will never be handled; the wait ends with the observation
        open.yield()
        try await withTimeout { await waiting.value }
        try await withTimeout { await observation.waitUntilEnded() }
        #expect(await recorder.seen == [1, 2])
    }

    @Test("the owner is held weakly, and the observation ends at the next post once it is gone")
    func endsWithOwner() async throws {
        let mailroom = Mailroom()
        var owner: Recorder? = Recorder()
        weak let gone = owner
        let (handled, report) = AsyncStream.makeStream(of: Int.self)
        let observation = await mailroom.observe(Ping.self, owner: owner!) { recorder, ping in
            await recorder.handle(ping.id, pause: false)
            report.yield(ping.id)
        }
        await mailroom.post(Ping(id: 1))
        #expect(try await handled.first(1) == [1])

        owner = nil
        #expect(gone == nil, "the observation must not keep its owner alive")
        await mailroom.post(Ping(id: 2))  // the handler is not called: there is no owner
        try await withTimeout { await observation.waitUntilEnded() }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        report.finish()
        #expect(try await handled.collect() == [], "nothing was handled after the owner went")
    }

    @Test("discarding the Observation does not stop it")
    func discardingDoesNotStop() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let (handled, report) = AsyncStream.makeStream(of: Int.self)
        _ = await mailroom.observe(Ping.self, owner: recorder) { _, ping in report.yield(ping.id) }
        await mailroom.post(Ping(id: 7))
        #expect(try await handled.first(1) == [7])
        withExtendedLifetime(recorder) {}
    }

    @Test("cancel() stops delivery before the next mail, even if more is buffered")
    func cancelStopsBeforeNextMail() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let (inside, reportInside) = AsyncStream.makeStream(of: Void.self)
        let (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        let (handled, report) = AsyncStream.makeStream(of: Int.self)
        let observation = await mailroom.observe(Ping.self, owner: recorder) { _, ping in
            if ping.id == 1 {
                reportInside.yield()
                for await _ in gate { break }  // held here until the test opens the gate
            }
            report.yield(ping.id)
        }
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])
        _ = try await inside.first(1)
        observation.cancel()
        #expect(observation.isCancelled)
        openGate.yield()
        try await withTimeout { await observation.waitUntilEnded() }
        report.finish()
        #expect(try await handled.collect() == [1], "2 and 3 were buffered but never handled")
        #expect(await mailroom.subscriberCount(Ping.self) == 0, "removed by the time it ended")
        withExtendedLifetime(recorder) {}
    }

    @Test("a handler isolated to the main actor runs there")
    @MainActor
    func mainActorHandler() async throws {
        let mailroom = Mailroom()
        let screen = Screen()
        let (handled, report) = AsyncStream.makeStream(of: Void.self)
        await mailroom.observe(Ping.self, owner: screen) { @MainActor screen, ping in
            MainActor.assertIsolated("a @MainActor handler must run on the main actor")
            screen.shown.append(ping.id)
            report.yield()
        }
        await mailroom.post(Ping(id: 3))
        await mailroom.post(Ping(id: 4))
        _ = try await handled.first(2)
        #expect(screen.shown == [3, 4])
    }

    @Test("observations take the same sender filters and post-time filters as subscriptions")
    func senderFilters() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let alice = Player("alice")
        let (handled, report) = AsyncStream.makeStream(of: String.self)
        await mailroom.observe(Ping.self, from: .only(alice), owner: recorder) { _, ping in
            report.yield("alice \(ping.id)")
        }
        await mailroom.observe(
            Ping.self,
            from: .only(RoomID("lobby")),
            owner: recorder,
            where: { $0.id > 1 },
            handler: { _, ping in report.yield("lobby \(ping.id)") }
        )
        await mailroom.observe(Ping.self, fromAny: Player.self, owner: recorder) { _, envelope in
            report.yield("player \(envelope.sender.name) \(envelope.mail.id)")
        }
        await mailroom.post(Ping(id: 1), from: alice)
        await mailroom.post(Ping(id: 1), from: RoomID("lobby"))  // filtered out
        await mailroom.post(Ping(id: 2), from: RoomID("lobby"))
        let seen = try await handled.first(3)
        #expect(Set(seen) == ["alice 1", "player alice 1", "lobby 2"])
    }

    @Test("an Observation is Hashable: distinct observations are distinct")
    func hashable() async {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let first = await mailroom.observe(Ping.self, owner: recorder) { _, _ in }
        let second = await mailroom.observe(Ping.self, owner: recorder) { _, _ in }
        #expect(Set([first, second, first]).count == 2)
        first.cancel()
        second.cancel()
    }

    @Test("cancel() on the handler's actor, after the loop took a mail, stops that mail's handler call")
    @MainActor
    func cancelOnHandlersActorAfterTake() async throws {
        let mailroom = Mailroom()
        let screen = Screen()
        let taken = Atomic(0)
        let observation = mailroom.observeForTesting(
            Ping.self,
            owner: screen,
            afterTakingMail: { taken.add(1, ordering: .sequentiallyConsistent) },
            handler: { @MainActor screen, ping in screen.shown.append(ping.id) }
        )
        await mailroom.post(Ping(id: 1))
        // Keep the main actor busy, without suspending, until the loop has taken the mail and
        // is on its way here; then cancel before it gets here.
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while taken.load(ordering: .sequentiallyConsistent) == 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("the observation never took the mail")
                return
            }
        }
        observation.cancel()
        try await withTimeout { await observation.waitUntilEnded() }
        #expect(screen.shown == [], "no handler call may start after cancel() returns")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("cancel() does not interrupt the handler call in progress: its task is not cancelled")
    func cancelDoesNotInterruptRunningCall() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        let (inside, reportInside) = AsyncStream.makeStream(of: Void.self)
        let (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        let (outcomes, report) = AsyncStream.makeStream(of: Bool.self)
        let observation = await mailroom.observe(Ping.self, owner: recorder) { _, _ in
            reportInside.yield()
            for await _ in gate { break }
            // A sleep in a cancelled task would throw at once.
            let slept = (try? await Task.sleep(for: .milliseconds(1))) != nil
            report.yield(!Task.isCancelled && slept)
        }
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)])
        _ = try await inside.first(1)
        observation.cancel()
        openGate.yield()
        try await withTimeout { await observation.waitUntilEnded() }
        report.finish()
        #expect(try await outcomes.collect() == [true], "the running call finished uncancelled; mail 2 never ran")
        withExtendedLifetime(recorder) {}
    }

    @Test("isCancelled says only whether cancel() was called, not whether the observation ended")
    func isCancelledOnlyAfterCancel() async throws {
        let mailroom = Mailroom()
        var owner: Recorder? = Recorder()
        let byOwner = await mailroom.observe(Ping.self, owner: owner!) { _, _ in }
        let byClose = await mailroom.observe(Pong.self, owner: Recorder()) { _, _ in }
        let recorder = Recorder()
        let byCancel = await mailroom.observe(Ping.self, owner: recorder) { _, _ in }

        owner = nil
        await mailroom.post(Ping(id: 1))  // the first observation ends: its owner is gone
        try await withTimeout { await byOwner.waitUntilEnded() }
        #expect(byOwner.isCancelled == false)

        byCancel.cancel()
        #expect(byCancel.isCancelled)
        try await withTimeout { await byCancel.waitUntilEnded() }

        await mailroom.close()
        try await withTimeout { await byClose.waitUntilEnded() }
        #expect(byClose.isCancelled == false)
        withExtendedLifetime(recorder) {}
    }
}
