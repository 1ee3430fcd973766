import AsyncMail
import AsyncMailTesting
import Testing

/// Code under test that knows only `Mailroom.shared`.
enum Till {
    static func ring(_ id: Int) async {
        await Mailroom.shared.post(Ping(id: id))
    }
}

/// Lets two tests wait for each other, so that they provably overlap.
actor Rendezvous {
    static let shared = Rendezvous()
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func meet() async {
        arrived += 1
        if arrived == 2 {
            for continuation in waiting { continuation.resume() }
            waiting = []
        } else {
            await withCheckedContinuation { waiting.append($0) }
        }
    }
}

@Suite("Each test its own Mailroom.shared", .isolatedSharedMailroom)
struct IsolationTests {
    /// Posts `ids` through code that uses `Mailroom.shared`, while the other test does the same,
    /// and expects to hear exactly its own.
    private func postWhileTheOtherTestDoes(_ ids: [Int]) async throws {
        let heard = await Mailroom.shared.subscribe(to: Ping.self)
        // Both tests are subscribed and posting at once, or this times out: the suite runs its
        // tests in parallel (Swift Testing's default), which is what the trait is for.
        try await withTimeout { await Rendezvous.shared.meet() }
        for id in ids {
            await Till.ring(id)
            await Task.yield()
        }
        let mine = try await heard.first(ids.count)
        // Had the other test's mail reached this mailroom, it would be interleaved here.
        #expect(mine.map(\.id) == ids)
    }

    @Test("the first of two parallel tests hears only its own mail")
    func first() async throws {
        try await postWhileTheOtherTestDoes(Array(0..<500))
    }

    @Test("the second of two parallel tests hears only its own mail")
    func second() async throws {
        try await postWhileTheOtherTestDoes(Array(1_000..<1_500))
    }

    @Test("tasks the test starts see its mailroom; a detached task sees the process's")
    func inheritance() async {
        let scoped = Mailroom.shared
        let child = await Task { Mailroom.shared }.value
        let detached = await Task.detached { Mailroom.shared }.value
        #expect(child === scoped)
        #expect(detached !== scoped)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { Mailroom.shared === scoped }
            for await same in group { #expect(same) }
        }
    }
}

@Suite("Outside the trait")
struct SharedOutsideTheTraitTests {
    @Test("Mailroom.shared is one process-wide mailroom")
    func processWide() async {
        let first = Mailroom.shared
        let again = await Task.detached { Mailroom.shared }.value
        #expect(first === again)
    }
}
