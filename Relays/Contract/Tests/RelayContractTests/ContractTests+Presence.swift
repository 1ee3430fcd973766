import AsyncMail
import AsyncMailRelay
import AsyncMailTesting
import Foundation
import Testing

extension ContractTests {
    @Test(
        "presence: an entry tracked by one relay is listed by the others, with its changes; untracked and on a clean stop it leaves",
        arguments: Engine.all
    )
    func presenceCrosses(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(presence: RelayPresence(expiry: .seconds(5)))
        let here = try engine.makeRelay(Mailroom(), place, settings)
        let there = try engine.makeRelay(Mailroom(), place, settings)
        let running = try await start(here)
        try await start(there)
        let changes = diffs(of: there.presenceChanges(in: "lobby"))
        #expect(try await changes.first(1) == [PresenceDiff()], "the whole list first: empty")

        try here.track("ada", in: "lobby", meta: ["name": "Ada"])
        let ada = PresenceEntry(key: "ada", meta: ["name": "Ada"], instance: here.origin)
        #expect(try await changes.first(1) == [PresenceDiff(joins: [ada])])

        try here.track("ada", in: "lobby", meta: ["name": "Ada L."])
        let renamed = PresenceEntry(key: "ada", meta: ["name": "Ada L."], instance: here.origin)
        #expect(try await changes.first(1) == [PresenceDiff(joins: [renamed], leaves: [ada])])

        here.untrack("ada", in: "lobby")
        #expect(try await changes.first(1) == [PresenceDiff(leaves: [renamed])])

        try here.track("bob", in: "lobby", meta: [:])
        let bob = PresenceEntry(key: "bob", meta: [:], instance: here.origin)
        #expect(try await changes.first(1) == [PresenceDiff(joins: [bob])])
        #expect(there.presence(in: "lobby") == [bob])
        try await stop(running)
        #expect(try await changes.first(1) == [PresenceDiff(leaves: [bob])], "a clean stop leaves at once")
        #expect(there.counters.presenceExpired == 0, "left, not expired")
    }

    @Test("presence: a process killed (SIGKILL) leaves every list within its expiry", arguments: Engine.all)
    func killedProcessLeavesPresence(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        // The sweep removes a dead instance's entries within the expiry less one heartbeat: that
        // heartbeat is this test's margin for a loaded machine (1 s).
        let expiry = Duration.seconds(5)
        let heartbeat = Duration.seconds(1)
        let here = try engine.makeRelay(
            Mailroom(),
            place,
            Settings(presence: RelayPresence(expiry: expiry), heartbeat: heartbeat)
        )
        try await start(here)
        let changes = diffs(of: here.presenceChanges(in: "lobby"))
        #expect(try await changes.first(1) == [PresenceDiff()])
        let environment = ["RELAY_EXPIRY_MS": "5000", "RELAY_HEARTBEAT_MS": "1000"]
        let (peer, lines) = try Peer.launch(["present"], at: place, adding: environment)
        defer { if peer.isRunning { peer.terminate() } }
        let joined = try #require(try await changes.first(1).first)
        #expect(joined.joins.map(\.key) == ["peer"])
        #expect(joined.joins.first?.meta["pid"] == "\(peer.processIdentifier)")
        _ = lines

        kill(peer.processIdentifier, SIGKILL)
        let killed = ContinuousClock.now
        let left = try #require(try await changes.first(1).first)
        let took = ContinuousClock.now - killed
        #expect(left.leaves.map(\.key) == ["peer"])
        #expect(took < expiry, "gone \(took) after the kill, within the expiry of \(expiry)")
        #expect(here.counters.presenceExpired == 1)
    }
}

/// A topic's presence changes as a stream any task may wait on.
private func diffs(of changes: PresenceChanges) -> AsyncStream<PresenceDiff> {
    let (stream, continuation) = AsyncStream.makeStream(of: PresenceDiff.self)
    let task = Task {
        for await diff in changes { continuation.yield(diff) }
        continuation.finish()
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
}
