import Testing

@testable import AsyncMail

// Every code block of the DocC articles, run as written: `Scripts/check-doc-excerpts.py` checks in
// CI that each block appears here (or in a snippet or example) line for line. The lines around a
// block set up what it names and check what it claims.

struct ChatLine: Mail {
    let text: String
}

struct Price: Mail {
    let cents: Int
}

struct PriceChanged: Mail {
    let cents: Int
}

struct OrderPlaced: Mail {
    let orderID: Int
    let total: Int
}

/// What `audit(_:)` saw, for the tap example.
let audited = Locked<[Int]>([])

func audit(_ order: OrderPlaced) {
    audited.withLock { $0.append(order.orderID) }
}

final class Dashboard: Sendable {
    func start(_ mailroom: Mailroom) async {
        await mailroom.observe(PriceChanged.self, owner: self) { dashboard, change in
            await dashboard.show(change)
        }
    }
}

/// What the article warns against: a handler that captures `self` holds its owner strongly.
final class CapturingDashboard: Sendable {
    func start(_ mailroom: Mailroom) async -> Observation {
        await mailroom.observe(PriceChanged.self, owner: self) { _, change in
            await self.show(change)
        }
    }

    func show(_ change: PriceChanged) async {}
}

extension Dashboard {
    static let shown = Locked<[Int]>([])

    func show(_ change: PriceChanged) async {
        Self.shown.withLock { $0.append(change.cents) }
    }
}

@Suite("Article examples, as written")
struct ArticleExampleTests {
    @Test("Observing and Tapping: an owner reached through the handler's parameter goes; one captured stays")
    func capturingTheOwnerKeepsItAlive() async throws {
        let mailroom = Mailroom()
        weak var passed: Dashboard?
        do {
            let dashboard = Dashboard()
            passed = dashboard
            await dashboard.start(mailroom)
        }
        #expect(passed == nil, "held weakly: gone with its last reference")

        var capturing: CapturingDashboard? = CapturingDashboard()
        weak let captured = capturing
        let observation = await capturing!.start(mailroom)
        capturing = nil
        #expect(captured != nil, "the handler's own capture keeps its owner, and so the observation, alive")
        observation.cancel()
        try await withTimeout { await observation.waitUntilEnded() }
        await mailroom.close()
        try await waitUntil("the cancelled observation released its handler, and the handler its owner") {
            captured == nil
        }
    }

    @Test("AsyncMail: the landing page")
    func landingPage() async {
        struct OrderPlaced: Mail { let orderID: Int }

        let mailroom = Mailroom()
        let orders = await mailroom.subscribe(to: OrderPlaced.self)  // live from here on
        await mailroom.post(OrderPlaced(orderID: 1))
        await mailroom.close()  // the loop below ends after its mail

        for await order in orders {
            print("cooking", order.orderID)
        }
    }

    @Test("Buffering and Backpressure: a backlog limit")
    func backlogLimit() async {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(
            to: ChatLine.self,
            from: .only(RoomID("lobby")),
            backlog: .ending(past: 4_096)
        )
        #expect(inbox.backlogLimit == 4_096)
        #expect(await mailroom.subscriberCount(ChatLine.self, from: .only(RoomID("lobby"))) == 1)
    }

    @Test("Buffering and Backpressure: receipts")
    func receipts() async throws {
        let mailroom = Mailroom()
        let dashboard = await mailroom.subscribe(to: Price.self, bufferingPolicy: .bufferingNewest(2))
        let auditor = await mailroom.subscribe(to: Price.self)

        var total = Receipt()
        for cents in [100, 101, 102, 103, 104] {
            total += await mailroom.post(Price(cents: cents))
        }
        // total == Receipt(delivered: 7, dropped: 3): the dashboard kept 103 and 104
        #expect(total == Receipt(delivered: 7, dropped: 3))
        await mailroom.close()
        #expect(try await dashboard.collect().map(\.cents) == [103, 104])
        #expect(try await auditor.collect().count == 5)
    }

    @Test("Lifetimes and Cancellation: cancelling the consumer")
    func cancellingTheConsumer() async {
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Ping.self)
        let consumer = Task { for await _ in stream {} }
        consumer.cancel()
        await consumer.value
        let remaining = await mailroom.subscriberCount(Ping.self)  // 0, deterministically
        #expect(remaining == 0)
    }

    @Test("Lifetimes and Cancellation: leaving a loop early")
    func leavingEarly() async throws {
        let mailroom = Mailroom()
        let watcher = Task {
            let pings = await mailroom.subscribe(to: Ping.self)
            for await ping in pings where ping.id == 3 { break }
        }  // `pings` is dropped here, so the subscription is removed
        // The task subscribes when it starts; wait for that before posting (see Server Patterns).
        try await withTimeout {
            while await mailroom.subscriberCount(Ping.self) != 1 { await Task.yield() }
        }
        for id in 1...3 { await mailroom.post(Ping(id: id)) }
        try await withTimeout { await watcher.value }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("Senders and Filters: three ways to pin a sender")
    func senders() async {
        let mailroom = Mailroom()
        let alice = Player("alice")
        struct Said: Mail { let text: String }
        struct RoomID: Hashable, Sendable { let name: String }

        let fromAlice = await mailroom.subscribe(to: Said.self, from: .only(alice))  // one object
        let inLobby = await mailroom.subscribe(to: Said.self, from: .only(RoomID(name: "lobby")))  // one value
        let everyone = await mailroom.subscribe(to: Said.self, fromAny: Player.self)  // envelopes

        await mailroom.post(Said(text: "hi"), from: alice)
        for await envelope in everyone {
            print(envelope.sender.name, envelope.mail.text)  // alice hi
            break
        }
        // Whom a post from alice would reach: her own subscription, and the one to every player.
        #expect(await mailroom.subscriberCount(Said.self, from: .only(alice)) == 2)
        #expect(await mailroom.subscriberCount(Said.self, from: .only(RoomID(name: "lobby"))) == 1)
        withExtendedLifetime((fromAlice, inLobby)) {}
    }

    @Test("Observing and Tapping: an owner-bound handler")
    func ownerBoundHandler() async throws {
        let mailroom = Mailroom()
        let dashboard = Dashboard()
        await dashboard.start(mailroom)
        await mailroom.post(PriceChanged(cents: 250))
        try await withTimeout {
            while Dashboard.shown.withLock({ $0 }) != [250] { await Task.yield() }
        }
    }

    @Test("Observing and Tapping: a post-time filter")
    func postTimeFilter() async throws {
        let mailroom = Mailroom()
        let large = await mailroom.subscribe(to: OrderPlaced.self, where: { $0.total > 10_000 })
        await mailroom.post(OrderPlaced(orderID: 1, total: 500))
        await mailroom.post(OrderPlaced(orderID: 2, total: 20_000))
        await mailroom.close()
        #expect(try await large.collect().map(\.orderID) == [2])
    }

    @Test("Observing and Tapping: a tap on every post")
    func tap() async throws {
        let mailroom = Mailroom()
        let tapping = Task {
            for await posted in await mailroom.tap() {
                print(posted.typeName, posted.sender.map { String(describing: $0) } ?? "-")
                if let order = posted.mail(as: OrderPlaced.self) { audit(order) }
            }
        }
        try await withTimeout {
            while await mailroom.tapCount != 1 { await Task.yield() }
        }
        await mailroom.post(OrderPlaced(orderID: 77, total: 1), from: RoomID("till"))
        await mailroom.close()
        try await withTimeout { await tapping.value }
        #expect(audited.withLock { $0 } == [77])
    }

    @Test("Observing and Tapping: replay of the latest mail")
    func replay() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Settings.self)
        await mailroom.post(Settings(theme: "dark"))

        let current = await mailroom.latest(Settings.self)  // Settings(theme: "dark")
        let settings = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
        // first Settings(theme: "dark"), then every later post
        #expect(current == Settings(theme: "dark"))
        await mailroom.post(Settings(theme: "light"))
        await mailroom.close()
        #expect(try await settings.collect().map(\.theme) == ["dark", "light"])
    }
}
