// AsyncMail against what users would otherwise reach for, shape for shape, in one run.
// Names are "Shape/Implementation"; `run.sh` divides medians within a shape. The shapes
// themselves live in the `Shapes` target, which `Probe` shares for its interleaved ratios.
import AsyncAlgorithms
import AsyncMail
import Benchmark
import Foundation
import Shapes

/// Mail a consumer actually received, for implementations that may drop silently.
let delivered = BenchmarkMetric.custom("Delivered", polarity: .prefersLarger, useScalingFactor: false)

extension Benchmark {
    /// Brackets a shape's timed part with this benchmark's measurement.
    func measure(_ timedPart: () async -> Void) async {
        startMeasurement()
        await timedPart()
        stopMeasurement()
    }
}

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
        let stream = await mailroom.subscribe(to: Beat.self)
        await steady(consuming: stream, measure: benchmark.measure) { await mailroom.post(Beat(value: $0)) }
    }

    Benchmark("Steady/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
        await steady(consuming: stream, measure: benchmark.measure) { continuation.yield(Beat(value: $0)) }
    }

    Benchmark("Steady/AsyncChannel") { benchmark in
        let channel = AsyncChannel<Beat>()
        await steady(consuming: channel, measure: benchmark.measure) { await channel.send(Beat(value: $0)) }
    }

    Benchmark("Steady/NotificationCenter") { benchmark in
        // The usual bridge: a block observer feeding the consuming task.
        let center = NotificationCenter()
        let name = Notification.Name("Beat")
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let observer = center.addObserver(forName: name, object: nil, queue: nil) { note in
            continuation.yield(note.userInfo?["value"] as? Int ?? 0)
        }
        await steady(consuming: stream, measure: benchmark.measure) {
            center.post(name: name, object: nil, userInfo: ["value": $0])
        }
        center.removeObserver(observer)
    }

    Benchmark(
        "Steady/messages(of:for:)",
        configuration: .init(metrics: [.wallClock, .throughput, .mallocCountTotal, delivered])
    ) { benchmark in
        let received = await steadyMessages(measure: benchmark.measure)
        // How much of the mail it actually handed over: the rest was dropped silently.
        benchmark.measurement(delivered, received)
    }

    // MARK: 1b. Paced delivery: the poster waits for an acknowledgement every `pacedWindow`
    // mails, which keeps Foundation's typed messages under their ten-message buffer, so every
    // implementation delivers everything and they are compared on equal work.

    Benchmark("Paced/Mailroom") { benchmark in
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Beat.self)
        await paced(consuming: stream, measure: benchmark.measure) { await mailroom.post(Beat(value: $0)) }
    }

    Benchmark("Paced/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
        await paced(consuming: stream, measure: benchmark.measure) { continuation.yield(Beat(value: $0)) }
    }

    Benchmark("Paced/messages(of:for:)") { benchmark in
        await pacedMessages(measure: benchmark.measure)
    }

    // MARK: 2. Burst: post N, then consume N.

    Benchmark("Burst/Mailroom") { benchmark in
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Beat.self)
        await benchmark.measure {
            for value in 0..<mailPerSample { await mailroom.post(Beat(value: value)) }
            await drain(stream, expecting: mailPerSample)
        }
    }

    Benchmark("Burst/AsyncStream") { benchmark in
        let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
        await benchmark.measure {
            for value in 0..<mailPerSample { continuation.yield(Beat(value: value)) }
            await drain(stream, expecting: mailPerSample)
        }
    }

    // MARK: 3. Fan-out: the same number of deliveries spread over 10, 100 or 1000 subscribers.

    for subscribers in [10, 100, 1_000] {
        Benchmark("FanOut/Mailroom x\(subscribers)") { benchmark in
            await fanOut(to: subscribers, measure: benchmark.measure)
        }
    }

    // MARK: 4. Post cost beside 10,000 subscriptions that do not match, and alone.

    for crowd in Crowd.allCases {
        let pin = Pin(beside: crowd)
        Benchmark(crowd.aloneShape) { benchmark in
            await postCost(on: Mailroom(), pinned: pin, measure: benchmark.measure)
        }
        Benchmark(crowd.besideShape) { benchmark in
            let mailroom = Mailroom()
            let bystanders = await crowd.gather(on: mailroom)
            await postCost(on: mailroom, pinned: pin, measure: benchmark.measure)
            withExtendedLifetime(bystanders) {}
        }
    }

    Benchmark("PostCost/contentsOf") { benchmark in
        let mailroom = Mailroom()
        let target = await mailroom.subscribe(to: Beat.self, bufferingPolicy: .bufferingNewest(1))
        let batch = (0..<mailPerSample).map(Beat.init(value:))
        await benchmark.measure { await mailroom.post(contentsOf: batch) }
        withExtendedLifetime(target) {}
    }

    // MARK: 5. Subscribe + cancel churn.

    Benchmark("Churn/subscribe+drop", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let mailroom = Mailroom()
        for _ in benchmark.scaledIterations {
            // Dropping the stream ends the subscription at once.
            _ = await mailroom.subscribe(to: Beat.self)
        }
    }

    Benchmark("Churn/subscribe+iterate+cancel", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let mailroom = Mailroom()
        for _ in benchmark.scaledIterations {
            let stream = await mailroom.subscribe(to: Beat.self)
            let consumer = Task { for await _ in stream {} }
            consumer.cancel()
            await consumer.value
        }
    }

    Benchmark("Churn/AsyncStream make+drop", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
            continuation.onTermination = { _ in }
            blackHole(stream)
        }
    }
}
