// AsyncMail against what users would otherwise reach for, shape for shape, in one run.
// Names are "Shape/Implementation"; `run.sh` divides medians within a shape.
import AsyncAlgorithms
import AsyncMail
import Benchmark
import Foundation
import Synchronization

struct Tick: Mail {
    let value: Int
}

/// The baseline mail for Foundation's typed notifications.
struct TickMessage: NotificationCenter.AsyncMessage {
    typealias Subject = AnyObject
    let value: Int
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<TickMessage> {
    static var tick: Self { .init() }
}

/// Distinct mail types without writing ten thousand declarations: nest these fourteen deep.
struct Zero<T: Mail>: Mail {}
struct One<T: Mail>: Mail {}
struct Unrelated: Mail {}

struct RoomID: Hashable, Sendable {
    let number: Int
}

final class Sender: Sendable {}

final class Flag: Sendable {
    let isSet = Atomic(false)
}

/// Mail per sample in the delivery shapes.
let messages = 10_000
/// Deliveries per sample in the fan-out shapes, whatever the subscriber count.
let fanOutDeliveries = 100_000
/// Subscriptions that a post must not pay for.
let bystanders = 10_000
/// Mail in flight before the paced poster waits: below Foundation's ten-message buffer.
let window = 8
/// Mail a consumer actually received, for implementations that may drop silently.
let delivered = BenchmarkMetric.custom("Delivered", polarity: .prefersLarger, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .microseconds,
        warmupIterations: 2,
        maxDuration: .seconds(2),
        maxIterations: 40
    )

    // MARK: 1. Steady delivery: one subscriber, poster and consumer in different tasks.

    Benchmark("Steady/Mailroom") { benchmark in
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Tick.self)
        await measureSteady(benchmark, consuming: stream) { await mailroom.post(Tick(value: $0)) }
    }

    Benchmark("Steady/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Tick.self)
        await measureSteady(benchmark, consuming: stream) { continuation.yield(Tick(value: $0)) }
    }

    Benchmark("Steady/AsyncChannel") { benchmark in
        let channel = AsyncChannel<Tick>()
        await measureSteady(benchmark, consuming: channel) { await channel.send(Tick(value: $0)) }
    }

    Benchmark("Steady/NotificationCenter") { benchmark in
        // The usual bridge: a block observer feeding the consuming task.
        let center = NotificationCenter()
        let name = Notification.Name("Tick")
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let observer = center.addObserver(forName: name, object: nil, queue: nil) { note in
            continuation.yield(note.userInfo?["value"] as? Int ?? 0)
        }
        await measureSteady(benchmark, consuming: stream) {
            center.post(name: name, object: nil, userInfo: ["value": $0])
        }
        center.removeObserver(observer)
    }

    Benchmark(
        "Steady/messages(of:for:)",
        configuration: .init(metrics: [.wallClock, .throughput, .mallocCountTotal, delivered])
    ) { benchmark in
        let center = NotificationCenter()
        let listening = Flag()
        let sequence = center.messages(of: AnyObject.self, for: .tick)
        let consumer = Task {
            var received = 0
            for await message in sequence {
                if message.value < 0 { listening.isSet.store(true, ordering: .releasing) }
                if message.value == Int.max { break }
                if message.value >= 0 { received += 1 }
            }
            return received
        }
        // It listens only once iteration starts, so prime it until it hears something.
        while !listening.isSet.load(ordering: .acquiring) {
            center.post(TickMessage(value: -1))
            await Task.yield()
        }
        benchmark.startMeasurement()
        for value in 0..<messages { center.post(TickMessage(value: value)) }
        // It keeps only the newest ten, so the end marker (posted last) always arrives.
        center.post(TickMessage(value: .max))
        let received = await consumer.value
        benchmark.stopMeasurement()
        // How much of the mail it actually handed over: the rest was dropped silently.
        benchmark.measurement(delivered, received)
    }

    // MARK: 1b. Paced delivery: the poster waits for an acknowledgement every `window` mail,
    // which keeps Foundation's typed messages under their ten-message buffer, so all three
    // implementations deliver everything and are compared on equal work.

    Benchmark("Paced/Mailroom") { benchmark in
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Tick.self)
        await measurePaced(benchmark, consuming: stream) { await mailroom.post(Tick(value: $0)) }
    }

    Benchmark("Paced/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Tick.self)
        await measurePaced(benchmark, consuming: stream) { continuation.yield(Tick(value: $0)) }
    }

    Benchmark("Paced/messages(of:for:)") { benchmark in
        let center = NotificationCenter()
        let listening = Flag()
        let sequence = center.messages(of: AnyObject.self, for: .tick)
        let (acks, ack) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var received = 0
            for await message in sequence {
                if message.value < 0 {
                    listening.isSet.store(true, ordering: .releasing)
                    continue
                }
                received += 1
                if received % window == 0 { ack.yield() }
            }
        }
        while !listening.isSet.load(ordering: .acquiring) {
            center.post(TickMessage(value: -1))
            await Task.yield()
        }
        var pending = acks.makeAsyncIterator()
        benchmark.startMeasurement()
        for value in 0..<messages {
            center.post(TickMessage(value: value))
            if (value + 1) % window == 0 { await pending.next() }
        }
        benchmark.stopMeasurement()
        consumer.cancel()
    }

    // MARK: 2. Burst: post N, then consume N.

    Benchmark("Burst/Mailroom") { benchmark in
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Tick.self)
        benchmark.startMeasurement()
        for value in 0..<messages { await mailroom.post(Tick(value: value)) }
        await drain(stream, expecting: messages)
        benchmark.stopMeasurement()
    }

    Benchmark("Burst/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Tick.self)
        benchmark.startMeasurement()
        for value in 0..<messages { continuation.yield(Tick(value: value)) }
        await drain(stream, expecting: messages)
        benchmark.stopMeasurement()
    }

    // MARK: 3. Fan-out: the same number of deliveries spread over 10, 100 or 1000 subscribers.

    for subscribers in [10, 100, 1_000] {
        Benchmark("FanOut/Mailroom x\(subscribers)") { benchmark in
            let posts = fanOutDeliveries / subscribers
            let mailroom = Mailroom()
            var consumers: [Task<Void, Never>] = []
            for _ in 0..<subscribers {
                let stream = await mailroom.subscribe(to: Tick.self)
                consumers.append(Task { await drain(stream, expecting: posts) })
            }
            benchmark.startMeasurement()
            for value in 0..<posts { await mailroom.post(Tick(value: value)) }
            for consumer in consumers { await consumer.value }
            benchmark.stopMeasurement()
        }
    }

    // MARK: 4. Post cost when many subscriptions do not match.

    Benchmark("PostCost/alone") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Tick.self)
        await measurePosts(benchmark, on: mailroom, from: nil as RoomID?)
        withExtendedLifetime(target) {}
    }

    Benchmark("PostCost/10k other types") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Tick.self)
        var others: [any Sendable] = []
        for bits in 0..<bystanders {
            others.append(await subscribe(Unrelated.self, bits: bits, depth: 14, on: mailroom))
        }
        await measurePosts(benchmark, on: mailroom, from: nil as RoomID?)
        withExtendedLifetime((target, others)) {}
    }

    Benchmark("PostCost/pinned alone") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Tick.self, from: RoomID(number: -1))
        await measurePosts(benchmark, on: mailroom, from: RoomID(number: -1))
        withExtendedLifetime(target) {}
    }

    Benchmark("PostCost/10k other value senders") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Tick.self, from: RoomID(number: -1))
        var others: [AsyncStream<Tick>] = []
        for number in 0..<bystanders {
            others.append(await mailroom.subscribe(to: Tick.self, from: RoomID(number: number)))
        }
        await measurePosts(benchmark, on: mailroom, from: RoomID(number: -1))
        withExtendedLifetime((target, others)) {}
    }

    Benchmark("PostCost/object alone") { benchmark in
        let mailroom = Mailroom()
        let sender = Sender()
        let target = await mailroom.subscribe(to: Tick.self, from: sender)
        await measurePosts(benchmark, on: mailroom, from: sender)
        withExtendedLifetime(target) {}
    }

    Benchmark("PostCost/10k other object senders") { benchmark in
        let mailroom = Mailroom()
        let sender = Sender()
        let target = await mailroom.subscribe(to: Tick.self, from: sender)
        let senders = (0..<bystanders).map { _ in Sender() }
        var others: [AsyncStream<Tick>] = []
        for other in senders { others.append(await mailroom.subscribe(to: Tick.self, from: other)) }
        await measurePosts(benchmark, on: mailroom, from: sender)
        withExtendedLifetime((target, others, senders)) {}
    }

    Benchmark("PostCost/contentsOf") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Tick.self)
        let batch = (0..<messages).map(Tick.init(value:))
        benchmark.startMeasurement()
        await mailroom.post(contentsOf: batch)
        benchmark.stopMeasurement()
        withExtendedLifetime(target) {}
    }

    // MARK: 5. Subscribe + cancel churn.

    Benchmark("Churn/subscribe+drop", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let mailroom = Mailroom()
        for _ in benchmark.scaledIterations {
            // Dropping the stream ends the subscription at once.
            _ = await mailroom.subscribe(to: Tick.self)
        }
    }

    Benchmark("Churn/subscribe+iterate+cancel", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let mailroom = Mailroom()
        for _ in benchmark.scaledIterations {
            let stream = await mailroom.subscribe(to: Tick.self)
            let consumer = Task { for await _ in stream {} }
            consumer.cancel()
            await consumer.value
        }
    }

    Benchmark("Churn/AsyncStream make+drop", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            let (stream, continuation) = AsyncStream.makeStream(of: Tick.self)
            continuation.onTermination = { _ in }
            blackHole(stream)
        }
    }
}

/// Consumes exactly `count` elements.
func drain<S: AsyncSequence & Sendable>(_ sequence: S, expecting count: Int) async where S.Element: Sendable {
    guard count > 0 else { return }
    var received = 0
    do {
        for try await _ in sequence {
            received += 1
            if received == count { return }
        }
    } catch {}
    fatalError("the sequence ended after \(received) of \(count) elements")
}

/// Consumes `sequence`, acknowledging every `window` elements, until cancelled.
func acknowledge<S: AsyncSequence & Sendable>(
    _ sequence: S,
    every window: Int,
    into ack: AsyncStream<Void>.Continuation
) async where S.Element: Sendable {
    var received = 0
    do {
        for try await _ in sequence {
            received += 1
            if received % window == 0 { ack.yield() }
        }
    } catch {}
}

/// Times `messages` mails sent with `send` while another task consumes all of `stream`.
func measureSteady<S: AsyncSequence & Sendable>(
    _ benchmark: Benchmark,
    consuming stream: S,
    send: (Int) async -> Void
) async where S.Element: Sendable {
    let consumer = Task { await drain(stream, expecting: messages) }
    benchmark.startMeasurement()
    for value in 0..<messages { await send(value) }
    await consumer.value
    benchmark.stopMeasurement()
}

/// Times `messages` mails sent with `send`, waiting for the consumer of `stream` every `window`.
func measurePaced<S: AsyncSequence & Sendable>(
    _ benchmark: Benchmark,
    consuming stream: S,
    send: (Int) async -> Void
) async where S.Element: Sendable {
    let (acks, ack) = AsyncStream.makeStream(of: Void.self)
    let consumer = Task { await acknowledge(stream, every: window, into: ack) }
    var pending = acks.makeAsyncIterator()
    benchmark.startMeasurement()
    for value in 0..<messages {
        await send(value)
        if (value + 1) % window == 0 { await pending.next() }
    }
    benchmark.stopMeasurement()
    consumer.cancel()
}

/// Times `messages` posts into a subscription nobody is reading, so only the post is measured.
func measurePosts<S: Sendable>(_ benchmark: Benchmark, on mailroom: Mailroom, from sender: S?) async {
    benchmark.startMeasurement()
    if let sender {
        for value in 0..<messages { await mailroom.post(Tick(value: value), from: sender) }
    } else {
        for value in 0..<messages { await mailroom.post(Tick(value: value)) }
    }
    benchmark.stopMeasurement()
}

/// Subscribes to the distinct mail type that `bits` names, `depth` wrappers deep.
func subscribe<T: Mail>(_ base: T.Type, bits: Int, depth: Int, on mailroom: Mailroom) async -> any Sendable {
    if depth == 0 { return await mailroom.subscribe(to: T.self) }
    return bits & 1 == 0
        ? await subscribe(Zero<T>.self, bits: bits >> 1, depth: depth - 1, on: mailroom)
        : await subscribe(One<T>.self, bits: bits >> 1, depth: depth - 1, on: mailroom)
}
