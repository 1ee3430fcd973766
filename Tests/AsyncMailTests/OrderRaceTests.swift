import AsyncMail
import AsyncMailTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncMail

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one subscription heard, as post ids, in order.
private final class Heard: Sendable {
    let name: String
    private let ids = Locked<[Int]>([])

    init(_ name: String) { self.name = name }

    func append(_ id: Int) { ids.withLock { $0.append(id) } }
    var all: [Int] { ids.withLock { $0 } }
}

/// The first pair of subscriptions that heard two posts in opposite orders, described; nil when
/// every two subscriptions agree on the order of every two posts they both heard.
private func firstDisagreement(_ heard: [Heard]) -> String? {
    let orders = heard.map { list in
        Dictionary(list.all.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }
    for left in heard.indices {
        for right in heard.indices where right > left {
            let common = heard[left].all.filter { orders[right][$0] != nil }
            // In `left`'s order; `right` must have them in the same order.
            for (earlier, later) in zip(common, common.dropFirst())
            where orders[right][earlier]! > orders[right][later]! {
                return "\(heard[left].name) heard \(earlier) before \(later), \(heard[right].name) the other way round"
            }
        }
    }
    return nil
}

@Suite("One order, while replaying subscribes race posts")
struct OrderRaceTests {
    @Test(
        "a post made after a replaying subscribe returned never overtakes the mail it replayed",
        .timeLimit(.minutes(1))
    )
    func replayIsNeverOvertaken() async throws {
        let gate = Gate()
        // Parks the first post to take its lanes, just before it takes them.
        let parkNext = Locked(true)
        let mailroom = Mailroom(laneProbe: { _ in
            if parkNext.withLock({ parking in
                defer { parking = false }
                return parking
            }) {
                gate.park()
            }
        })
        await mailroom.retainLatest(Ping.self)
        let everyone = await mailroom.subscribe(to: Ping.self)
        let first = Task { await onThread { mailroom.postSynchronously(Ping(id: 1)) } }
        try await gate.waitUntilParked()
        // The first post is under way; a subscribe that replays the latest mail returns, then a
        // second post is made.
        let replaying = await mailroom.subscribe(to: Ping.self, startingWithLatest: true)
        await mailroom.post(Ping(id: 2))
        gate.release()
        _ = await first.value
        await mailroom.close()
        let byEveryone = try await everyone.collect().map(\.id)
        let byReplaying = try await replaying.collect().map(\.id)
        #expect(byEveryone.sorted() == [1, 2])
        // The replaying subscriber may hear the first post replayed or live, or not at all, but
        // never in an order another subscriber contradicts.
        #expect(
            byReplaying == byEveryone.filter(byReplaying.contains),
            "everyone heard \(byEveryone), the replaying subscription \(byReplaying)"
        )
    }

    @Test(
        "posters on rooms and types, racing subscriptions that come and go (pinned, everyone, fromAny:, replaying, bounded) and taps: any two hear shared posts in one order",
        .tags(.stress),
        .timeLimit(.minutes(5)),
        arguments: [UInt64(41), 42]
    )
    func racingSubscriptionsKeepOneOrder(seed: UInt64) async throws {
        for round in 0..<scaled(40) {
            if let disagreement = try await raceRound(seed: seed &* 1_000 &+ UInt64(round)) {
                Issue.record("seed \(seed), round \(round): \(disagreement)")
                return
            }
        }
    }

    @Test(
        "8 posting threads racing subscribe, unsubscribe and close: no hang, every loop ends, each poster's order kept",
        .tags(.stress),
        .timeLimit(.minutes(5)),
        arguments: [UInt64(7), 8]
    )
    func postingThreadsRaceChurnAndClose(seed: UInt64) async throws {
        for round in 0..<scaled(20) {
            var random = SeededRandomNumberGenerator(seed: seed &* 1_000 &+ UInt64(round))
            let mailroom = Mailroom()
            await mailroom.retainLatest(Pong.self)
            // Each thread posts its own numbered mail to rooms of two types until the mailroom
            // closes (a post then reaches nobody), with and without a sender.
            let posters = (0..<8).map { poster -> Task<Void, Never> in
                Task {
                    await onThread {
                        for sequence in 0..<4_000 {
                            let receipt: Receipt
                            switch sequence % 3 {
                            case 0:
                                receipt = mailroom.postSynchronously(
                                    Numbered(poster: poster, sequence: sequence),
                                    from: poster % 4
                                )
                            case 1: receipt = mailroom.postSynchronously(Numbered(poster: poster, sequence: sequence))
                            default: receipt = mailroom.postSynchronously(Pong(id: sequence), from: poster % 4)
                            }
                            _ = receipt
                        }
                    }
                }
            }
            var loops: [Task<[Numbered], Never>] = []
            let closeAfter = Int.random(in: 10..<40, using: &random)
            for number in 0..<closeAfter {
                let stream: AsyncStream<Numbered>
                switch Int.random(in: 0..<3, using: &random) {
                case 0: stream = await mailroom.subscribe(to: Numbered.self)
                case 1:
                    stream = await mailroom.subscribe(
                        to: Numbered.self,
                        from: .only(Int.random(in: 0..<4, using: &random))
                    )
                default: stream = await mailroom.subscribe(to: Numbered.self, bufferingPolicy: .bufferingNewest(4))
                }
                loops.append(Task { await stream.untimedCollect() })
                // Unsubscribing: some loops are cancelled while posts fly.
                if number % 3 == 2, let loop = loops.randomElement(using: &random) { loop.cancel() }
                await Task.yield()
            }
            await mailroom.close()  // while the threads still post
            for loop in loops {
                let heard = try await withTimeout(.seconds(60)) { await loop.value }
                // Each poster's mail arrives in the order it was posted.
                for poster in 0..<8 {
                    let sequences = heard.filter { $0.poster == poster }.map(\.sequence)
                    #expect(sequences == sequences.sorted(), "round \(round): poster \(poster) out of order")
                }
            }
            for poster in posters { await poster.value }
            #expect(await mailroom.subscriberCount(Numbered.self) == 0)
            #expect(await mailroom.routeTableCount == 0, "close() leaves nothing in any table")
        }
    }

    /// One round: 4 threads post 60 mails each (3 of every 4 a `Ping`, to one of three rooms or
    /// with no sender; the rest a `Pong`), while subscriptions of every kind are made, and some
    /// dropped, on the test's task. Every post waits a little, at random, just before it takes
    /// its lanes, which is where a post and a replaying subscribe race.
    private func raceRound(seed: UInt64) async throws -> String? {
        let counter = Atomic<UInt64>(seed)
        let mailroom = Mailroom(laneProbe: { _ in
            // A cheap shared random walk: about one post in three gives up its core here.
            let draw = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
            if draw >> 62 == 0 { sched_yield() }
        })
        await mailroom.retainLatest(Ping.self)
        await mailroom.retainLatest(Pong.self)
        var random = SeededRandomNumberGenerator(seed: seed)
        var heard: [Heard] = []
        var loops: [Task<Void, Never>] = []
        func listen<Element: Sendable>(
            _ name: String,
            _ stream: AsyncStream<Element>,
            id: @escaping @Sendable (Element) -> Int?
        ) {
            let list = Heard(name)
            heard.append(list)
            loops.append(
                Task {
                    for await element in stream {
                        if let id = id(element) { list.append(id) }
                    }
                }
            )
        }
        listen("tap", await mailroom.tap()) { (posted: PostedMail) in
            posted.mail(as: Ping.self)?.id ?? posted.mail(as: Pong.self)?.id
        }
        let posters = (0..<4).map { poster -> Task<Void, Never> in
            Task {
                await onThread {
                    for index in 0..<60 {
                        let id = poster * 1_000 + index
                        switch index % 4 {
                        case 3: mailroom.postSynchronously(Pong(id: id), from: index % 3)
                        case 2: mailroom.postSynchronously(Ping(id: id))
                        default: mailroom.postSynchronously(Ping(id: id), from: (poster + index) % 3)
                        }
                    }
                }
            }
        }
        for number in 0..<14 {
            let room = Int.random(in: 0..<3, using: &random)
            let replays = Bool.random(using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                listen("everyone \(number)", await mailroom.subscribe(to: Ping.self, startingWithLatest: replays)) {
                    $0.id
                }
            case 1:
                listen(
                    "room \(room) \(number)",
                    await mailroom.subscribe(to: Ping.self, from: Senders.only(room), startingWithLatest: replays)
                ) { $0.id }
            case 2:
                listen(
                    "fromAny \(number)",
                    await mailroom.subscribe(to: Ping.self, fromAny: Int.self, startingWithLatest: replays)
                ) {
                    $0.mail.id
                }
            case 3:
                listen(
                    "bounded \(number)",
                    await mailroom.subscribe(
                        to: Ping.self,
                        bufferingPolicy: .bufferingOldest(8),
                        startingWithLatest: replays
                    )
                ) { $0.id }
            case 4:
                listen(
                    "Pong room \(room) \(number)",
                    await mailroom.subscribe(to: Pong.self, from: Senders.only(room), startingWithLatest: replays)
                ) {
                    $0.id
                }
            default:
                listen("tap \(number)", await mailroom.tap()) { (posted: PostedMail) in
                    posted.mail(as: Ping.self)?.id ?? posted.mail(as: Pong.self)?.id
                }
            }
            // Some go again: their loop ends, and what they heard so far still counts.
            if Int.random(in: 0..<4, using: &random) == 0, let loop = loops.randomElement(using: &random) {
                loop.cancel()
            }
            await Task.yield()
        }
        for poster in posters { await poster.value }
        await mailroom.close()
        for loop in loops { try await withTimeout(.seconds(60)) { await loop.value } }
        return firstDisagreement(heard)
    }
}
