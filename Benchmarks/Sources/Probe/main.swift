// Measures what package-benchmark's counters cannot: net heap bytes held per idle subscription
// and post-to-receive latency percentiles, each against a raw AsyncStream in the same run; and
// samples of the ratio targets with both sides of each ratio interleaved (see Interleaved.swift).
//
//   swift run -c release Probe                 idle memory and latency, one "label: value | note" line each
//   swift run -c release Probe ratios [ROUNDS [NAME]]  interleaved samples of every ratio target (or
//                                               of the shapes whose name contains NAME), for ratios.py
//   swift run -c release Probe quick           best-of-40 ns per post and per subscribe+drop, for A/B
//   swift run -c release Probe count CROWD|yield|shared alone|beside POSTS [observed]   single-threaded posts, for callgrind.sh
//   swift run -c release Probe profile         1M posts to one subscriber, for a profiler
//   swift run -c release Probe profile-churn   1M subscribe-and-drop pairs, for a profiler
//   swift run -c release Probe profile-pinned  posts pinned to an object and to a value beside 10k others
//   swift run -c release Probe scaling [POSTS] 1-16 posting tasks on distinct rooms, types, rooms with readers (beside a
//                                               hand-written broadcaster per room); a quiet post's p99 beside a fan-out
//   swift run -c release Probe threads [SECONDS [ROUNDS [SHAPE]]]  1-16 OS threads posting synchronously (see Threads.swift)
//   swift run -c release Probe hubs [ROUNDS [POSTS [ROOMS [NAME]]]]  rooms with a reader each: the hubs a user writes
//                                               by hand against a mailroom doing the same work, or only the shapes
//                                               whose name contains NAME, for a profiler (see Hubs.swift)
//   swift run -c release Probe history         heap per retained mail; resuming 10,000 missed mails against a raw stream
//   swift run -c release Probe stalled         heap held by one consumer that stopped reading, per buffer
import AsyncMail
import AsyncMailObservability
import CHeapStats
import Foundation
import Shapes

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
    for crowd in [Crowd.objects, .values] {
        let mailroom = Mailroom()
        let bystanders = await crowd.gather(on: mailroom)
        for _ in 0..<30 { await postCost(on: mailroom, pinned: Pin(beside: crowd)) { await $0() } }
        withExtendedLifetime(bystanders) {}
    }
    exit(0)
}

/// A 1 KB chat line, the size the ChatServer's soak test posts.
struct Kilobyte: Mail {
    let bytes: [UInt8]
}

if arguments.first == "stalled" {
    // 40,000 posts of 1 KB to a room with one consumer that stopped reading, as in the ChatServer
    // soak: the heap it ends up holding with each way of buffering, and what the receipts said.
    let posts = 40_000
    let limit = 1_024
    func heldAfterPosts(_ subscribe: (Mailroom) async -> any Sendable) async -> (Int, Receipt) {
        let mailroom = Mailroom()
        let before = heapInUse()
        let stalled = await subscribe(mailroom)
        var total = Receipt()
        for index in 0..<posts {
            total += await mailroom.post(
                Kilobyte(bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1_024))
            )
        }
        let held = heapInUse() - before
        withExtendedLifetime(stalled) {}
        return (held, total)
    }
    for (name, subscribe) in [
        (".unbounded", { (mailroom: Mailroom) -> any Sendable in await mailroom.subscribe(to: Kilobyte.self) }),
        (
            ".bufferingNewest(\(limit))",
            { await $0.subscribe(to: Kilobyte.self, bufferingPolicy: .bufferingNewest(limit)) }
        ),
        ("backlog: .ending(past: \(limit))", { await $0.subscribe(to: Kilobyte.self, backlog: .ending(past: limit)) }),
    ] as [(String, (Mailroom) async -> any Sendable)] {
        let (held, receipt) = await heldAfterPosts(subscribe)
        print("stalled consumer, \(posts) x 1 KB, \(name): \(held / 1_024) KB held | \(receipt)")
    }
    exit(0)
}

if arguments.first == "threads" {
    let rest = Array(arguments.dropFirst())
    let seconds = rest.first.flatMap(Double.init) ?? 0.5
    let rounds = rest.dropFirst().first.flatMap(Int.init) ?? 3
    await runThreads(seconds: seconds, rounds: rounds, only: rest.dropFirst(2).first)
    exit(0)
}

if arguments.first == "hubs" {
    let rest = Array(arguments.dropFirst()).compactMap { Int($0) }
    await runHubs(
        rounds: rest.first ?? 5,
        posts: rest.dropFirst().first ?? 200_000,
        roomCount: rest.dropFirst(2).first ?? 1_000,
        only: arguments.dropFirst(4).first
    )
    exit(0)
}

if arguments.first == "scaling" {
    await runScaling(postsEach: arguments.dropFirst().first.flatMap { Int($0) } ?? 200_000)
    exit(0)
}

if arguments.first == "count" {
    // `count CROWD alone|beside POSTS`: posts pinned as beside a crowd of that kind, with or
    // without the crowd, for `callgrind.sh` to count instructions. Everything stays on the main
    // actor (subscribe and post never hop): valgrind 3.19 dies when the runtime starts a worker.
    if arguments.dropFirst().first == "yield" {
        // The floor: the same yields into a raw AsyncStream.
        let (stream, continuation) = AsyncStream.makeStream(of: Beat.self, bufferingPolicy: .bufferingNewest(1))
        for value in 0..<(arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000) {
            continuation.yield(Beat(value: value))
        }
        withExtendedLifetime(stream) {}
        exit(0)
    }
    if arguments.dropFirst().first == "shared" {
        // Unpinned posts through `Mailroom.shared`, read on every post as code that knows only
        // the shared mailroom does: what reading `shared` costs beside the post.
        let target = await Mailroom.shared.subscribe(to: Beat.self, bufferingPolicy: .bufferingNewest(1))
        for value in 0..<(arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000) {
            await Mailroom.shared.post(Beat(value: value))
        }
        withExtendedLifetime(target) {}
        exit(0)
    }
    if let shape = arguments.dropFirst().first, shape.hasPrefix("history") {
        // `history`: unpinned posts of a type that keeps history, to an ordinary subscription;
        // `history-positioned`: the same to a subscription with positions; `history-pinned`: posts
        // from one room (a `Hashable` value) to a subscription to that room, the chat server's
        // shape; `history-beside`: a type without history, in a mailroom where another type keeps it.
        let posts = arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000
        let mailroom = Mailroom()
        if shape == "history-beside" {
            await mailroom.retainHistory(Stamp.self, count: 1_000)
        } else {
            await mailroom.retainHistory(Beat.self, count: 1_000)
        }
        let newest = AsyncStream<Beat>.Continuation.BufferingPolicy.bufferingNewest(1)
        let room = Room(number: 1)
        let target =
            shape == "history-pinned"
            ? await mailroom.subscribe(to: Beat.self, from: .only(room), bufferingPolicy: newest)
            : await mailroom.subscribe(to: Beat.self, bufferingPolicy: newest)
        let positioned =
            shape == "history-positioned"
            ? try await mailroom.subscribe(to: Beat.self, after: nil, bufferingPolicy: .bufferingNewest(1)) : nil
        if shape == "history-pinned" {
            for value in 0..<posts { await mailroom.post(Beat(value: value), from: room) }
        } else {
            for value in 0..<posts { await mailroom.post(Beat(value: value)) }
        }
        withExtendedLifetime((target, positioned)) {}
        exit(0)
    }
    if arguments.dropFirst().first == "latest" {
        // Posts from one room (a `Hashable` value) of a type that keeps its latest mail, to a
        // subscription to that room: each keeps the room's latest and the type's newest.
        let posts = arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000
        let mailroom = Mailroom()
        await mailroom.retainLatest(Beat.self)
        let room = Room(number: 1)
        let newest = AsyncStream<Beat>.Continuation.BufferingPolicy.bufferingNewest(1)
        let target = await mailroom.subscribe(to: Beat.self, from: .only(room), bufferingPolicy: newest)
        for value in 0..<posts { await mailroom.post(Beat(value: value), from: room) }
        withExtendedLifetime(target) {}
        exit(0)
    }
    if let shape = arguments.dropFirst().first, shape.hasPrefix("demand") {
        // `demand`: a subscription to a room made and dropped, POSTS times, while nobody watches
        // counts; `demand-watched`: the same while one watcher follows that room's count (two
        // count changes a cycle, each read and yielded to a stream nobody drains).
        let cycles = arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000
        let mailroom = Mailroom()
        let room = Room(number: 1)
        let watcher = shape == "demand-watched" ? await mailroom.subscriberCounts(Beat.self, from: .only(room)) : nil
        for _ in 0..<cycles {
            let subscription = await mailroom.subscribe(to: Beat.self, from: .only(room))
            withExtendedLifetime(subscription) {}
        }
        withExtendedLifetime(watcher) {}
        exit(0)
    }
    let crowd = arguments.dropFirst().first.flatMap(Crowd.init(rawValue:)) ?? .types
    let beside = arguments.dropFirst(2).first == "beside"
    let posts = arguments.dropFirst(3).first.flatMap { Int($0) } ?? 10_000
    // `observed`: what AsyncMailObservability costs per post, with swift-metrics' default (no-op)
    // backend and no ServiceContext: the instrumentation's own work, not a backend's.
    let mailroom =
        arguments.dropFirst(4).first == "observed" ? Mailroom(instrumentation: MailroomObservability()) : Mailroom()
    let bystanders = beside ? await crowd.gather(on: mailroom) : []
    let pin = Pin(beside: crowd)
    let newest = AsyncStream<Beat>.Continuation.BufferingPolicy.bufferingNewest(1)
    switch pin {
    case .unpinned:
        let target = await mailroom.subscribe(to: Beat.self, bufferingPolicy: newest)
        for value in 0..<posts { await mailroom.post(Beat(value: value)) }
        withExtendedLifetime(target) {}
    case .value(let room):
        let target = await mailroom.subscribe(to: Beat.self, from: .only(room), bufferingPolicy: newest)
        for value in 0..<posts { await mailroom.post(Beat(value: value), from: room) }
        withExtendedLifetime(target) {}
    case .object(let poster):
        let target = await mailroom.subscribe(to: Beat.self, from: .only(poster), bufferingPolicy: newest)
        for value in 0..<posts { await mailroom.post(Beat(value: value), from: poster) }
        withExtendedLifetime(target) {}
    }
    withExtendedLifetime(bystanders) {}
    exit(0)
}

if arguments.first == "history" {
    // What history costs: heap bytes per retained mail (a one-Int mail, so the figure is the
    // history's own overhead), and the time from resuming 10,000 missed mails to the first live
    // mail, against draining the same 10,000 already buffered in a raw AsyncStream.
    // Detached: top-level code runs on the main actor, where every `next()` would hop.
    for line in await Task.detached(operation: { await historyFigures() }).value { print(line) }
    exit(0)
}

/// The `history` mode's figures, one line each.
func historyFigures() async -> [String] {
    var lines: [String] = []
    let kept = 100_000
    let mailroom = Mailroom()
    await mailroom.retainHistory(Beat.self, count: kept)
    // The entries' array is one large block, which malloc maps on its own: counted too.
    let before = heapInUse() + Int(mapped_bytes_in_use())
    for value in 0..<kept { await mailroom.post(Beat(value: value)) }
    let perMail = Double(heapInUse() + Int(mapped_bytes_in_use()) - before) / Double(kept)
    lines.append("history: heap per retained mail: \(Int(perMail.rounded())) bytes | a one-Int mail, \(kept) kept")

    let missed = 10_000
    var resumeTimes: [Duration] = []
    var rawTimes: [Duration] = []
    for _ in 0..<21 {
        let room = Mailroom()
        await room.retainHistory(Beat.self, count: missed + 1)
        let first = try! await room.subscribe(to: Beat.self, after: nil, bufferingPolicy: .bufferingNewest(1))
        await room.post(Beat(value: -1))
        var iterator = first.mail.makeAsyncIterator()
        let position = await iterator.next()!.position
        for value in 0..<missed { await room.post(Beat(value: value)) }
        let clock = ContinuousClock()
        let start = clock.now
        let resumed = try! await room.subscribe(to: Beat.self, after: position)
        await room.post(Beat(value: missed))
        var received = 0
        for await mail in resumed.mail {
            received += 1
            if mail.mail.value == missed { break }
        }
        resumeTimes.append(clock.now - start)
        precondition(received == missed + 1)

        let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
        let rawStart = clock.now
        for value in 0...missed { continuation.yield(Beat(value: value)) }
        for await beat in stream where beat.value == missed { break }
        rawTimes.append(clock.now - rawStart)
    }
    let median = { (times: [Duration]) in times.sorted()[times.count / 2] }
    let ratio = median(resumeTimes) / median(rawTimes)
    lines.append(
        "history: resume 10,000 missed mails, to the first live mail: \(median(resumeTimes)) | raw AsyncStream, 10,001 yielded and drained: \(median(rawTimes)), \(String(format: "%.2f", ratio))x"
    )
    return lines
}

if arguments.first == "ratios" {
    let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 61
    let only = arguments.dropFirst(2).first
    // Detached: top-level code runs on the main actor, and the shapes' consumer tasks must not.
    for line in await Task.detached(operation: { await ratioSamples(rounds: rounds, only: only) }).value {
        print(line)
    }
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
    await Task.detached(operation: quickComparisons).value
    exit(0)
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
