import AsyncMail
import Testing

@testable import AsyncMail

struct Settings: Mail, Equatable {
    let theme: String
}

@Suite("Replay of the latest mail")
struct ReplayTests {
    @Test("a type that has not opted in keeps nothing, and replay starts empty")
    func notOptedIn() async throws {
        let mailroom = Mailroom()
        await mailroom.post(Settings(theme: "dark"))
        #expect(await mailroom.latest(Settings.self) == nil)
        let stream = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
        await mailroom.post(Settings(theme: "light"))
        #expect(try await stream.first(1) == [Settings(theme: "light")])
        #expect(await mailroom.routeTableCount == 1)
    }

    @Test("an opted-in type keeps its newest mail, and a subscription can start with it")
    func replaysNewest() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        await mailroom.retainLatest(Settings.self)  // idempotent
        await mailroom.post(Settings(theme: "dark"))
        await mailroom.post(Settings(theme: "light"))
        #expect(await mailroom.latest(Settings.self) == Settings(theme: "light"))

        let stream = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
        let plain = await mailroom.subscribe(to: Settings.self)
        await mailroom.post(Settings(theme: "sepia"))
        #expect(try await stream.first(2).map(\.theme) == ["light", "sepia"])
        #expect(try await plain.first(1).map(\.theme) == ["sepia"], "only when asked")
    }

    @Test("the newest mail is kept per sender, objects and values alike")
    func perSender() async throws {
        let mailroom = Mailroom()
        let alice = Player("alice")
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "alice-1"), from: alice)
        await mailroom.post(Settings(theme: "lobby-1"), from: RoomID("lobby"))
        await mailroom.post(Settings(theme: "alice-2"), from: alice)
        await mailroom.post(Settings(theme: "none"))

        #expect(await mailroom.latest(Settings.self)?.theme == "none")
        #expect(await mailroom.latest(Settings.self, from: .only(alice))?.theme == "alice-2")
        #expect(await mailroom.latest(Settings.self, from: .only(RoomID("lobby")))?.theme == "lobby-1")
        #expect(await mailroom.latest(Settings.self, from: .only(RoomID("kitchen"))) == nil)
        #expect(await mailroom.latest(Settings.self, from: .only(Player("lookalike"))) == nil)

        let fromAlice = await mailroom.subscribe(to: Settings.self, from: .only(alice), startingWithLatest: true)
        let fromLobby = await mailroom.subscribe(
            to: Settings.self,
            from: .only(RoomID("lobby")),
            startingWithLatest: true
        )
        #expect(try await fromAlice.first(1).map(\.theme) == ["alice-2"])
        #expect(try await fromLobby.first(1).map(\.theme) == ["lobby-1"])
    }

    @Test("replayed mail still has to pass the subscription's filter")
    func filterAppliesToReplay() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "dark"))
        let lightOnly = await mailroom.subscribe(
            to: Settings.self,
            startingWithLatest: true,
            where: { $0.theme == "light" }
        )
        await mailroom.post(Settings(theme: "light"))
        #expect(try await lightOnly.first(1).map(\.theme) == ["light"])
    }

    @Test("an observation can start with the latest mail")
    func observeStartsWithLatest() async throws {
        let mailroom = Mailroom()
        let recorder = Recorder()
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "dark"))
        let (handled, report) = AsyncStream.makeStream(of: String.self)
        await mailroom.observe(Settings.self, owner: recorder, startingWithLatest: true) { _, settings in
            report.yield(settings.theme)
        }
        await mailroom.post(Settings(theme: "light"))
        #expect(try await handled.first(2) == ["dark", "light"])
    }

    @Test("the copy kept for an object sender is released once it is gone; the type's current value stays")
    func departedSenderReleased() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        var sender: Player? = Player("leaving")
        weak let gone = sender
        await mailroom.post(Settings(theme: "theirs"), from: sender!)
        #expect(await mailroom.retainedObjectSenderCount(for: Settings.self) == 1)
        sender = nil
        #expect(gone == nil, "kept mail must not keep its sender alive")
        // The newest overall is the current value, whoever set it: like CurrentValueSubject.
        #expect(await mailroom.latest(Settings.self) == Settings(theme: "theirs"))
        #expect(await mailroom.retainedObjectSenderCount(for: Settings.self) == 0, "the per-sender copy is freed")
        let late = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
        await mailroom.post(Settings(theme: "next"))
        #expect(try await late.first(2).map(\.theme) == ["theirs", "next"])
    }

    @Test("kept mail survives with no subscribers, and close() releases it")
    func keptUntilClose() async {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "dark"))
        #expect(await mailroom.subscriberCount(Settings.self) == 0)
        #expect(await mailroom.latest(Settings.self) == Settings(theme: "dark"))
        await mailroom.close()
        #expect(await mailroom.latest(Settings.self) == nil)
        #expect(await mailroom.routeTableCount == 0)
    }

    @Test("posting alone frees departed senders' kept mail once the object senders double")
    func departedKeptMailSweptByPostsAlone() async {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        var first: [Player]? = (0..<100).map { Player("first \($0)") }
        for sender in first! { await mailroom.post(Settings(theme: sender.name), from: sender) }
        // Made while the first hundred live, so no address is reused.
        let second = (0..<100).map { Player("second \($0)") }
        first = nil
        for sender in second { await mailroom.post(Settings(theme: sender.name), from: sender) }
        // No count or `latest` ran: only posts swept. Without the sweep there would be 200.
        #expect(await mailroom.retainedObjectSenderCount(for: Settings.self) == 100)
        withExtendedLifetime(second) {}
    }

    @Test("a replayed mail is yielded holding its subscription's lane, so no newer post can overtake it")
    func replayHoldsTheDeliveryOrder() async throws {
        let observed = Locked<[Bool]>([])
        let mailroom = Mailroom(replayProbe: { isHeld in observed.withLock { $0.append(isHeld) } })
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "dark"))
        let stream = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
        await mailroom.post(Settings(theme: "light"))
        #expect(observed.withLock { $0 } == [true], "the replay ran once, holding its lane")
        #expect(try await stream.first(2).map(\.theme) == ["dark", "light"])
    }
}
