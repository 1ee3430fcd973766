// Measures what package-benchmark's counters cannot: net heap bytes held per idle subscription,
// post-to-receive latency percentiles, each against a raw AsyncStream in the same run, and the
// ratio targets with both sides of each ratio interleaved (see Interleaved.swift).
//
//   swift run -c release Probe            all of the above, one "label: value | note" line each
//   swift run -c release Probe profile    1M posts to one subscriber, for a profiler
//   swift run -c release Probe profile-churn    1M subscribe-and-drop pairs, for a profiler
//   swift run -c release Probe quick      best-of-40 ns per post and per subscribe+drop, for A/B
import AsyncMail
import CHeapStats
import Foundation

struct Stamp: Mail {
    let sent: ContinuousClock.Instant
}

/// Heap bytes in use right now.
func heapInUse() -> Int {
    Int(heap_bytes_in_use())
}

/// Net heap bytes per element for `count` of whatever `make` creates and keeps.
func bytesPerItem<T>(_ count: Int, _ make: () async -> T) async -> Double {
    var kept: [T] = []
    kept.reserveCapacity(count)
    let before = heapInUse()
    for _ in 0..<count { kept.append(await make()) }
    let after = heapInUse()
    withExtendedLifetime(kept) {}
    return Double(after - before) / Double(count)
}

/// One-way latencies of `samples` round trips: post, wait until the consumer has it, repeat.
func latencies(
    samples: Int,
    stream: AsyncStream<Stamp>,
    post: @escaping @Sendable (Stamp) async -> Void
) async -> [Duration] {
    let (acks, ack) = AsyncStream.makeStream(of: Duration.self)
    let consumer = Task {
        for await stamp in stream { ack.yield(ContinuousClock.now - stamp.sent) }
    }
    var results: [Duration] = []
    results.reserveCapacity(samples)
    var iterator = acks.makeAsyncIterator()
    for _ in 0..<samples {
        await post(Stamp(sent: .now))
        if let latency = await iterator.next() { results.append(latency) }
    }
    consumer.cancel()
    return results
}

func percentile(_ sorted: [Duration], _ p: Double) -> String {
    let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    let (seconds, attoseconds) = value.components
    return String(format: "%.1f µs", Double(seconds) * 1e6 + Double(attoseconds) / 1e12)
}

let arguments = CommandLine.arguments.dropFirst()

if arguments.first == "profile-churn" {
    // Subscribe and drop, for a profiler.
    let mailroom = Mailroom()
    for _ in 0..<1_000_000 { _ = await mailroom.subscribe(to: Stamp.self) }
    exit(0)
}

if arguments.first == "profile-pinned" {
    // Posts pinned to an object sender, then to a value sender, beside 10,000 others of each.
    final class Sender: Sendable {}
    let mailroom = Mailroom()
    let sender = Sender()
    let others = (0..<10_000).map { _ in Sender() }
    var streams = [await mailroom.subscribe(to: Stamp.self, from: sender)]
    for other in others { streams.append(await mailroom.subscribe(to: Stamp.self, from: other)) }
    for number in 0..<10_000 {
        streams.append(await mailroom.subscribe(to: Stamp.self, from: RoomNumber(value: number)))
    }
    let now = ContinuousClock.now
    for _ in 0..<300_000 { await mailroom.post(Stamp(sent: now), from: sender) }
    for _ in 0..<300_000 { await mailroom.post(Stamp(sent: now), from: RoomNumber(value: 7)) }
    withExtendedLifetime((streams, others)) {}
    exit(0)
}

if arguments.first == "profile" {
    // The hot path alone, for `valgrind --tool=callgrind`.
    let mailroom = Mailroom()
    let stream = await mailroom.subscribe(to: Stamp.self)
    let now = ContinuousClock.now
    for _ in 0..<1_000_000 { await mailroom.post(Stamp(sent: now)) }
    withExtendedLifetime(stream) {}
    exit(0)
}

if arguments.first == "quick" {
    // Best of many short runs per shape, for quick A/B comparisons while changing the hot path.
    /// Nanoseconds per operation for a run of 10,000.
    func perOperation(_ elapsed: Duration) -> Double {
        let (seconds, attoseconds) = elapsed.components
        return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / 10_000
    }
    func best(_ runs: Int = 40, _ body: () async -> Void) async -> Double {
        var fastest = Duration.seconds(1000)
        for _ in 0..<runs {
            let start = ContinuousClock.now
            await body()
            fastest = min(fastest, ContinuousClock.now - start)
        }
        return perOperation(fastest)
    }
    let rawYield = await best {
        let (stream, continuation) = AsyncStream.makeStream(of: Stamp.self)
        let now = ContinuousClock.now
        for _ in 0..<10_000 { continuation.yield(Stamp(sent: now)) }
        withExtendedLifetime(stream) {}
    }
    let post = await best {
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Stamp.self)
        let now = ContinuousClock.now
        for _ in 0..<10_000 { await mailroom.post(Stamp(sent: now)) }
        withExtendedLifetime(stream) {}
    }
    let sender = RoomNumber(value: 7)
    let pinnedPost = await best {
        let mailroom = Mailroom()
        let stream = await mailroom.subscribe(to: Stamp.self, from: sender)
        let now = ContinuousClock.now
        for _ in 0..<10_000 { await mailroom.post(Stamp(sent: now), from: sender) }
        withExtendedLifetime(stream) {}
    }
    let rawChurn = await best {
        for _ in 0..<10_000 {
            let (stream, continuation) = AsyncStream.makeStream(of: Stamp.self)
            continuation.onTermination = { _ in }
            withExtendedLifetime(stream) {}
        }
    }
    let churnRoom = Mailroom()
    let churn = await best {
        for _ in 0..<10_000 { _ = await churnRoom.subscribe(to: Stamp.self) }
    }
    print(
        String(
            format: "unread 10k, ns per post:   AsyncStream %6.0f  Mailroom %6.0f  pinned %6.0f",
            rawYield,
            post,
            pinnedPost
        )
    )
    print(String(format: "make + drop, ns per pair:  AsyncStream %6.0f  Mailroom %6.0f", rawChurn, churn))
    final class Sender: Sendable {}
    /// Best ns per pinned post alone and beside 10,000 other senders, measured alternately.
    func pinnedCosts(objects: Bool) async -> (alone: Double, beside: Double) {
        let sender = Sender()
        let senders = (0..<10_000).map { _ in Sender() }
        let alone = Mailroom()
        let crowded = Mailroom()
        var streams: [AsyncStream<Stamp>] = []
        for (number, other) in senders.enumerated() {
            streams.append(
                objects
                    ? await crowded.subscribe(to: Stamp.self, from: other)
                    : await crowded.subscribe(to: Stamp.self, from: RoomNumber(value: number))
            )
        }
        var fastest = [Double.infinity, Double.infinity]
        for _ in 0..<60 {
            for (index, mailroom) in [alone, crowded].enumerated() {
                let target =
                    objects
                    ? await mailroom.subscribe(to: Stamp.self, from: sender)
                    : await mailroom.subscribe(to: Stamp.self, from: RoomNumber(value: -1))
                let now = ContinuousClock.now
                let start = ContinuousClock.now
                if objects {
                    for _ in 0..<10_000 { await mailroom.post(Stamp(sent: now), from: sender) }
                } else {
                    for _ in 0..<10_000 { await mailroom.post(Stamp(sent: now), from: RoomNumber(value: -1)) }
                }
                fastest[index] = min(fastest[index], perOperation(ContinuousClock.now - start))
                withExtendedLifetime(target) {}
            }
        }
        withExtendedLifetime((streams, senders)) {}
        return (fastest[0], fastest[1])
    }
    let (valueAlone, valueAmong) = await pinnedCosts(objects: false)
    let (objectAlone, objectAmong) = await pinnedCosts(objects: true)
    print(String(format: "value sender, ns per post:  alone %6.0f  beside 10k %6.0f", valueAlone, valueAmong))
    print(String(format: "object sender, ns per post: alone %6.0f  beside 10k %6.0f", objectAlone, objectAmong))
    exit(0)
}

struct RoomNumber: Hashable, Sendable {
    let value: Int
}

// MARK: Idle subscriptions

let idle = 10_000
let mailroom = Mailroom()
_ = await mailroom.subscribe(to: Stamp.self)  // warm the type's route table out of the measurement
let perSubscription = await bytesPerItem(idle) { await mailroom.subscribe(to: Stamp.self) }
let perStream = await bytesPerItem(idle) { () -> (AsyncStream<Stamp>, AsyncStream<Stamp>.Continuation) in
    let pair = AsyncStream.makeStream(of: Stamp.self)
    pair.1.onTermination = { _ in }
    return pair
}
if perStream <= 0 {
    // Without glibc's heap statistics there is nothing to measure; say so rather than pass.
    print("Idle subscription, heap bytes: unavailable | needs glibc's mallinfo2")
} else {
    print("Idle subscription, heap bytes: \(Int(perSubscription)) | AsyncStream alone: \(Int(perStream))")
    let overhead = perSubscription - perStream
    print(
        "Idle subscription, bytes beyond AsyncStream: \(Int(overhead)) | "
            + (overhead <= 600 ? "meets" : "MISSES") + " target <= 600"
    )
}

// MARK: Latency

let samples = 20_000
let room = Mailroom()
let roomStream = await room.subscribe(to: Stamp.self)
let mailroomLatency = await latencies(samples: samples, stream: roomStream) { await room.post($0) }.sorted()
let (rawStream, rawContinuation) = AsyncStream.makeStream(of: Stamp.self)
let rawLatency = await latencies(samples: samples, stream: rawStream) { rawContinuation.yield($0) }.sorted()
print(
    "Latency p50, Mailroom: \(percentile(mailroomLatency, 0.5)) | AsyncStream: \(percentile(rawLatency, 0.5))"
)
print(
    "Latency p99, Mailroom: \(percentile(mailroomLatency, 0.99)) | AsyncStream: \(percentile(rawLatency, 0.99))"
)

// MARK: Ratio targets, interleaved

for line in await Task.detached(operation: { await interleavedRatios(rounds: 61) }).value { print(line) }
