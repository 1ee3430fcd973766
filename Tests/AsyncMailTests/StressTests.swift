import AsyncMailTesting
import Testing

@testable import AsyncMail

/// Mail that says who posted it and where it stood in that poster's schedule.
protocol Stamped: Mail, Hashable {
    var poster: Int { get }
    var sequence: Int { get }
    init(poster: Int, sequence: Int)
}

struct Alpha: Stamped {
    let poster: Int
    let sequence: Int
}

struct Beta: Stamped {
    let poster: Int
    let sequence: Int
}

/// How a stress subscription filters senders.
enum StressFilter: Hashable, Sendable {
    case everyone
    case room(String)
    case player(Int)
    case anyPlayer
}

/// Who a scheduled post comes from.
enum StressSender: Sendable {
    case none
    case room(String)
    case player(Int)

    func matches(_ filter: StressFilter) -> Bool {
        switch (filter, self) {
        case (.everyone, _): true
        case (.room(let wanted), .room(let actual)): wanted == actual
        case (.player(let wanted), .player(let actual)): wanted == actual
        case (.anyPlayer, .player): true
        default: false
        }
    }
}

/// One shared world for a stress test: a mailroom, two object senders and a fixed posting schedule.
struct StressWorld: Sendable {
    let mailroom = Mailroom()
    let players = [Player("player-0"), Player("player-1")]

    /// Poster `poster`'s `index`-th post: alternating mail types and a rotation of sender kinds.
    static func schedule(poster: Int, index: Int) -> (isAlpha: Bool, sender: StressSender) {
        let sender: StressSender =
            switch (index / 2) % 4 {
            case 0: .none
            case 1: .room(poster.isMultiple(of: 2) ? "even" : "odd")
            case 2: .player(poster % 2)
            default: .player((poster + 1) % 2)
            }
        return (index.isMultiple(of: 2), sender)
    }

    @discardableResult
    func post(poster: Int, index: Int) async -> Receipt {
        await cooperate(after: index)
        let (isAlpha, sender) = Self.schedule(poster: poster, index: index)
        return isAlpha
            ? await post(Alpha(poster: poster, sequence: index), from: sender)
            : await post(Beta(poster: poster, sequence: index), from: sender)
    }

    func post<M: Mail>(_ mail: M, from sender: StressSender) async -> Receipt {
        switch sender {
        case .none: await mailroom.post(mail)
        case .room(let name): await mailroom.post(mail, from: RoomID(name))
        case .player(let index): await mailroom.post(mail, from: players[index])
        }
    }

    /// Subscribes (live on return) and starts a consumer that collects until the stream ends.
    func startConsumer<M: Stamped>(_ type: M.Type, filter: StressFilter) async -> Task<[M], Never> {
        switch filter {
        case .everyone:
            let stream = await mailroom.subscribe(to: M.self)
            return Task { await stream.untimedCollect() }
        case .room(let name):
            let stream = await mailroom.subscribe(to: M.self, from: .only(RoomID(name)))
            return Task { await stream.untimedCollect() }
        case .player(let index):
            let stream = await mailroom.subscribe(to: M.self, from: .only(players[index]))
            return Task { await stream.untimedCollect() }
        case .anyPlayer:
            let stream = await mailroom.subscribe(to: M.self, fromAny: Player.self)
            return Task { await stream.untimedCollect().map(\.mail) }
        }
    }
}

/// A consumer of the exactly-once test and what it must have seen.
struct Observed<M: Stamped>: Sendable {
    let filter: StressFilter
    /// Subscribed while posts were in flight, so it owes only a suffix of each poster's mail.
    let late: Bool
    let received: [M]
}

// One at a time: each of these saturates both cores on its own.
@Suite("Stress", .tags(.stress), .serialized, .heavyTurns)
struct StressTests {
    static let seeds: [UInt64] = [0x5EED_0001, 0x5EED_0002]

    // MARK: Exactly once, one order

    @Test("8 posters x 50 subscribers, 200k posts: exactly once, posting order kept, one shared order")
    func exactlyOnceInOneOrder() async throws {
        let world = StressWorld()
        let posters = 8
        let postsEach = scaled(25_000)
        // 25 subscriptions per mail type; every fifth one joins while posts are in flight.
        let filters: [StressFilter] =
            Array(repeating: .everyone, count: 9)
            + [.room("even"), .room("odd"), .room("even"), .room("odd"), .room("even"), .room("odd")]
            + [.player(0), .player(1), .player(0), .player(1), .player(0), .player(1)]
            + Array(repeating: .anyPlayer, count: 4)
        let isLate = { (index: Int) in index % 5 == 4 }

        var alphas: [(StressFilter, Bool, Task<[Alpha], Never>)] = []
        var betas: [(StressFilter, Bool, Task<[Beta], Never>)] = []
        for (index, filter) in filters.enumerated() where !isLate(index) {
            alphas.append((filter, false, await world.startConsumer(Alpha.self, filter: filter)))
            betas.append((filter, false, await world.startConsumer(Beta.self, filter: filter)))
        }

        let (lateStart, startLate) = AsyncStream.makeStream(of: Void.self)
        let (lateReady, markLateReady) = AsyncStream.makeStream(of: Void.self)
        let lateJoiner = Task {
            _ = await lateStart.untimedFirst(1)
            var late: ([(StressFilter, Bool, Task<[Alpha], Never>)], [(StressFilter, Bool, Task<[Beta], Never>)]) = (
                [], []
            )
            for (index, filter) in filters.enumerated() where isLate(index) {
                late.0.append((filter, true, await world.startConsumer(Alpha.self, filter: filter)))
                late.1.append((filter, true, await world.startConsumer(Beta.self, filter: filter)))
            }
            markLateReady.yield()
            return late
        }

        // A hang guard, ten times the whole workload under ThreadSanitizer with both cores busy.
        try await withTimeout(.seconds(600)) {
            await withTaskGroup(of: Void.self) { group in
                for poster in 0..<posters {
                    group.addTask {
                        for index in 0..<postsEach {
                            if poster == 0 && index == postsEach / 4 {
                                // The other posters keep going while the late subscribers join.
                                startLate.yield()
                                _ = await lateReady.untimedFirst(1)
                            }
                            await world.post(poster: poster, index: index)
                        }
                    }
                }
            }
        }
        let late = try await withTimeout { await lateJoiner.value }
        alphas += late.0
        betas += late.1
        #expect(alphas.count + betas.count == 50)

        // Ending the streams ends every consumer; what each collected is then final.
        await world.mailroom.close()
        var alphaSeen: [Observed<Alpha>] = []
        var betaSeen: [Observed<Beta>] = []
        for (filter, late, task) in alphas {
            alphaSeen.append(Observed(filter: filter, late: late, received: try await withTimeout { await task.value }))
        }
        for (filter, late, task) in betas {
            betaSeen.append(Observed(filter: filter, late: late, received: try await withTimeout { await task.value }))
        }
        verify(alphaSeen, isAlpha: true, posters: posters, postsEach: postsEach)
        verify(betaSeen, isAlpha: false, posters: posters, postsEach: postsEach)
    }

    private func verify<M: Stamped>(_ observed: [Observed<M>], isAlpha: Bool, posters: Int, postsEach: Int) {
        // What each filter should see from each poster, in posting order.
        var expected: [StressFilter: [[Int]]] = [:]
        for filter in Set(observed.map(\.filter)) {
            expected[filter] = (0..<posters).map { poster in
                (0..<postsEach).filter { index in
                    let (alpha, sender) = StressWorld.schedule(poster: poster, index: index)
                    return alpha == isAlpha && sender.matches(filter)
                }
            }
        }
        // The first early, unfiltered subscriber saw every mail of the type: it is the reference order.
        guard let reference = observed.first(where: { $0.filter == .everyone && !$0.late }) else {
            Issue.record("no reference subscriber")
            return
        }
        var position: [M: Int] = [:]
        for (index, mail) in reference.received.enumerated() { position[mail] = index }

        for (number, subscriber) in observed.enumerated() {
            let label = "\(M.self) subscriber \(number) (\(subscriber.filter), late: \(subscriber.late))"
            var byPoster = Array(repeating: [Int](), count: posters)
            for mail in subscriber.received { byPoster[mail.poster].append(mail.sequence) }
            for poster in 0..<posters {
                let owed = expected[subscriber.filter]![poster]
                let got = byPoster[poster]
                if subscriber.late {
                    #expect(
                        got.count <= owed.count && Array(owed.suffix(got.count)) == got,
                        "\(label): poster \(poster)'s mail must be an unbroken suffix of what it posted"
                    )
                } else {
                    #expect(
                        got == owed,
                        "\(label): poster \(poster): got \(got.count) of \(owed.count), first difference at \(firstDifference(got, owed))"
                    )
                }
            }
            let positions = subscriber.received.map { position[$0] ?? -1 }
            #expect(!positions.contains(-1), "\(label): received mail the reference never saw")
            #expect(
                zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 },
                "\(label): order differs from the reference"
            )
        }
    }

    // MARK: Random cancellation

    @Test(
        "subscribers cancelled at random moments under load leave no subscription or storage behind",
        arguments: seeds
    )
    func randomCancellationUnderLoad(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let world = StressWorld()
        let filters: [StressFilter] = [.everyone, .room("even"), .room("odd"), .player(0), .player(1), .anyPlayer]

        // Each consumer subscribes inside its own task and ends in one of four ways.
        var consumers: [Task<Void, Never>] = []
        for _ in 0..<120 {
            let filter = filters.randomElement(using: &random)!
            let ending = Int.random(in: 0..<4, using: &random)
            let after = Int.random(in: 1...200, using: &random)
            let alpha = Bool.random(using: &random)
            consumers.append(
                Task {
                    try? await alpha
                        ? Self.consume(Alpha.self, filter, in: world, ending: ending, after: after)
                        : Self.consume(Beta.self, filter, in: world, ending: ending, after: after)
                }
            )
        }
        let cancellationOrder = consumers.shuffled(using: &random)
        let pauses = cancellationOrder.map { _ in Int.random(in: 0..<40, using: &random) }

        try await withTimeout(.seconds(120)) { [consumers] in
            await withTaskGroup(of: Void.self) { group in
                for poster in 0..<4 {
                    group.addTask {
                        for index in 0..<scaled(10_000) { await world.post(poster: poster, index: index) }
                    }
                }
                group.addTask {
                    // Cancel while posts are in flight, at uneven moments.
                    for (consumer, pause) in zip(cancellationOrder, pauses) {
                        for _ in 0..<pause { await Task.yield() }
                        consumer.cancel()
                    }
                }
            }
            for consumer in consumers { await consumer.value }
        }
        // A dropped stream's termination handler takes its subscription out, and may run just
        // after its consumer task returned: wait for the counts rather than read them once.
        let mailroom = world.mailroom
        try await waitUntil("every subscription has been taken out") {
            let alphas = await mailroom.subscriberCount(Alpha.self)
            let betas = await mailroom.subscriberCount(Beta.self)
            return alphas == 0 && betas == 0
        }
        try await waitUntil("no route table outlives its subscriptions") { await mailroom.routeTableCount == 0 }
    }

    private struct ConsumerFault: Error {}

    /// Consumes until cancelled, or leaves after `after` mail by breaking, throwing or cancelling itself.
    private static func consume<M: Stamped>(
        _ type: M.Type,
        _ filter: StressFilter,
        in world: StressWorld,
        ending: Int,
        after: Int
    ) async throws {
        let stream = await world.startConsumerStream(M.self, filter: filter)
        var seen = 0
        for await _ in stream {
            seen += 1
            guard seen == after else { continue }
            switch ending {
            case 0: break  // keep going until cancelled from outside
            case 1: return
            case 2: throw ConsumerFault()
            default: withUnsafeCurrentTask { $0?.cancel() }
            }
        }
    }

    // MARK: Bounded buffers

    @Test("bounded subscribers that never read: every post accounted for, and posting never waits on them")
    func boundedBuffersUnderLoad() async throws {
        let world = StressWorld()
        let limits = [-3, -1, 0, 1, 2, 5, 16, 64]
        var streams: [AsyncStream<Alpha>] = []
        for limit in limits {
            streams.append(await world.mailroom.subscribe(to: Alpha.self, bufferingPolicy: .bufferingOldest(limit)))
            streams.append(await world.mailroom.subscribe(to: Alpha.self, bufferingPolicy: .bufferingNewest(limit)))
        }
        let posters = 4
        let postsEach = scaled(10_000)
        // Nobody reads: if a post could wait for buffer space this would hang and time out.
        let total = try await withTimeout(.seconds(120)) {
            await withTaskGroup(of: Receipt.self) { group in
                for poster in 0..<posters {
                    group.addTask {
                        var sum = Receipt()
                        for index in 0..<postsEach {
                            await cooperate(after: index)
                            sum += await world.mailroom.post(Alpha(poster: poster, sequence: index))
                        }
                        return sum
                    }
                }
                return await group.reduce(into: Receipt()) { sum, receipt in
                    sum += receipt
                }
            }
        }
        #expect(total.matched == posters * postsEach * streams.count)
        // With no consumer waiting, each buffer takes exactly its limit (none for a limit of zero or less).
        #expect(total.delivered == 2 * limits.map { max($0, 0) }.reduce(0, +))
        withExtendedLifetime(streams) {}
    }

    // MARK: close() racing

    enum RaceOutcome: Sendable {
        case delivered(Int)
        case consumers([Task<Int, Never>])
        case closed
    }

    @Test("close() racing posts and subscribes: no hang, every loop ends, every delivery is received", arguments: seeds)
    func closeRacingPostsAndSubscribes(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let world = StressWorld()
        let closeAfterYields = Int.random(in: 0..<2_000, using: &random)
        let filters: [StressFilter] = [.everyone, .room("even"), .player(0), .anyPlayer]

        let outcomes = try await withTimeout(.seconds(120)) { () async -> [RaceOutcome] in
            await withTaskGroup(of: RaceOutcome.self) { group in
                for poster in 0..<4 {
                    group.addTask {
                        var delivered = 0
                        for index in 0..<scaled(5_000) {
                            delivered += await world.post(poster: poster, index: index).delivered
                        }
                        return .delivered(delivered)
                    }
                }
                for subscriber in 0..<3 {
                    group.addTask {
                        var consumers: [Task<Int, Never>] = []
                        for round in 0..<scaled(100) {
                            let filter = filters[(subscriber + round) % filters.count]
                            if round.isMultiple(of: 2) {
                                let task = await world.startConsumer(Alpha.self, filter: filter)
                                consumers.append(Task { await task.value.count })
                            } else {
                                let task = await world.startConsumer(Beta.self, filter: filter)
                                consumers.append(Task { await task.value.count })
                            }
                            await Task.yield()
                        }
                        return .consumers(consumers)
                    }
                }
                group.addTask {
                    for _ in 0..<closeAfterYields { await Task.yield() }
                    await world.mailroom.close()
                    return .closed
                }
                return await group.reduce(into: [RaceOutcome]()) { $0.append($1) }
            }
        }

        var delivered = 0
        var received = 0
        for outcome in outcomes {
            switch outcome {
            case .delivered(let count): delivered += count
            case .consumers(let tasks):
                for task in tasks { received += try await withTimeout { await task.value } }
            case .closed: break
            }
        }
        #expect(received == delivered, "every delivery a receipt counted reached a consumer, exactly once")
        #expect(await world.post(poster: 0, index: 0) == Receipt())
        #expect(await world.mailroom.routeTableCount == 0)
    }

    // MARK: Consumer faults

    enum Fault: String, CaseIterable, Sendable {
        case throwing, breaking, cancelledMidDelivery
    }

    @Test(
        "a consumer that leaves its loop by throwing, breaking or being cancelled mid-delivery releases its subscription",
        arguments: Fault.allCases
    )
    func consumerFaults(fault: Fault) async throws {
        let mailroom = Mailroom()
        let consumers = 50
        let (inside, reportInside) = AsyncStream.makeStream(of: Void.self)
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<consumers {
            let pings = await mailroom.subscribe(to: Ping.self)
            tasks.append(
                Task {
                    try? await Self.consume(pings, fault: fault, reportInside: reportInside)
                }
            )
        }
        for id in 0..<20 { await mailroom.post(Ping(id: id)) }
        if fault == .cancelledMidDelivery {
            // Every consumer is inside its loop body, holding a mail; cancel them there.
            _ = try await inside.first(consumers)
            for task in tasks { task.cancel() }
        }
        try await withTimeout { [tasks] in for task in tasks { await task.value } }
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.routeTableCount == 0)
    }

    private static func consume(
        _ pings: AsyncStream<Ping>,
        fault: Fault,
        reportInside: AsyncStream<Void>.Continuation
    ) async throws {
        for await ping in pings where ping.id == 3 {
            switch fault {
            case .throwing: throw ConsumerFault()
            case .breaking: return
            case .cancelledMidDelivery:
                reportInside.yield()
                // Busy with this mail until cancelled: a stream that never yields ends on cancellation.
                let (busy, keepBusy) = AsyncStream.makeStream(of: Void.self)
                for await _ in busy {}
                withExtendedLifetime(keepBusy) {}
            }
        }
    }

    // MARK: Long run

    @Test("a long run: over a million deliveries through subscribe, post and every filter")
    func millionDeliveries() async throws {
        let world = StressWorld()
        let sender = world.players[0]
        let postsEach = scaled(50_000)
        var consumers: [Task<[Alpha], Never>] = []
        for filter in [StressFilter.everyone, .everyone, .everyone, .everyone, .everyone, .everyone] {
            consumers.append(await world.startConsumer(Alpha.self, filter: filter))
        }
        for filter in [StressFilter.player(0), .player(0), .anyPlayer, .anyPlayer] {
            consumers.append(await world.startConsumer(Alpha.self, filter: filter))
        }
        // A hang guard, not a speed limit (how fast is the benchmarks' business): seconds under TSan.
        let delivered = try await withTimeout(.seconds(300)) {
            await withTaskGroup(of: Int.self) { group in
                for poster in 0..<2 {
                    group.addTask {
                        var delivered = 0
                        for index in 0..<postsEach {
                            await cooperate(after: index)
                            delivered += await world.mailroom.post(Alpha(poster: poster, sequence: index), from: sender)
                                .delivered
                        }
                        return delivered
                    }
                }
                return await group.reduce(0, +)
            }
        }
        await world.mailroom.close()
        #expect(delivered == 2 * postsEach * consumers.count)
        if stressScale >= 1 { #expect(delivered >= 1_000_000) }
        for consumer in consumers {
            let received = try await withTimeout { await consumer.value }
            #expect(received.count == 2 * postsEach)
            for poster in 0..<2 {
                let sequence = received.lazy.filter { $0.poster == poster }.map(\.sequence)
                #expect(Array(sequence) == Array(0..<postsEach))
            }
        }
    }
}

extension StressWorld {
    /// The stream a consumer would iterate, for consumers that subscribe inside their own task.
    func startConsumerStream<M: Stamped>(_ type: M.Type, filter: StressFilter) async -> AsyncStream<M> {
        switch filter {
        case .everyone: await mailroom.subscribe(to: M.self)
        case .room(let name): await mailroom.subscribe(to: M.self, from: .only(RoomID(name)))
        case .player(let index): await mailroom.subscribe(to: M.self, from: .only(players[index]))
        case .anyPlayer:
            // Re-wrap envelopes as a plain stream of mail; cancelling the consumer still ends the subscription.
            await {
                let envelopes = await mailroom.subscribe(to: M.self, fromAny: Player.self)
                return AsyncStream { continuation in
                    let forward = Task {
                        for await envelope in envelopes { continuation.yield(envelope.mail) }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in forward.cancel() }
                }
            }()
        }
    }
}

/// The first index where two arrays differ, or `nil` when they are equal.
func firstDifference(_ lhs: [Int], _ rhs: [Int]) -> Int? {
    zip(lhs, rhs).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        ?? (lhs.count == rhs.count ? nil : min(lhs.count, rhs.count))
}
