// `Probe scaling`: what many cores buy. Posting tasks on distinct rooms of one type, and on
// distinct types, as 1, 2, 4, 8 and 16 tasks (posts per second, and the speed-up over one task
// in the same run); and the p99 of a post to a quiet type while another task fans out to 1,000
// subscribers, against the same post's p99 with nothing else running. Every figure is a ratio
// within one run, so it holds on the machine it ran on: print the core count beside it.
import AsyncMail
import Foundation
import Synchronization

/// Mail types for the distinct-types shape, one per posting task: concrete, so that every post
/// runs specialised code, as an application's own types do.
protocol Blank: Mail {
    init()
}

struct BlankBase: Blank {}
struct BlankUp<Below: Blank>: Blank {}
struct Lane1: Blank {}
struct Lane2: Blank {}
struct Lane3: Blank {}
struct Lane4: Blank {}
struct Lane5: Blank {}
struct Lane6: Blank {}
struct Lane7: Blank {}
struct Lane8: Blank {}
struct Lane9: Blank {}
struct Lane10: Blank {}
struct Lane11: Blank {}
struct Lane12: Blank {}
struct Lane13: Blank {}
struct Lane14: Blank {}
struct Lane15: Blank {}

/// A poster on task `task`'s own type.
func typePoster(_ task: Int, on mailroom: Mailroom) async -> @Sendable () async -> Void {
    switch task {
    case 0: await lanePoster(BlankBase.self, .type(0), on: mailroom)
    case 1: await lanePoster(Lane1.self, .type(1), on: mailroom)
    case 2: await lanePoster(Lane2.self, .type(2), on: mailroom)
    case 3: await lanePoster(Lane3.self, .type(3), on: mailroom)
    case 4: await lanePoster(Lane4.self, .type(4), on: mailroom)
    case 5: await lanePoster(Lane5.self, .type(5), on: mailroom)
    case 6: await lanePoster(Lane6.self, .type(6), on: mailroom)
    case 7: await lanePoster(Lane7.self, .type(7), on: mailroom)
    case 8: await lanePoster(Lane8.self, .type(8), on: mailroom)
    case 9: await lanePoster(Lane9.self, .type(9), on: mailroom)
    case 10: await lanePoster(Lane10.self, .type(10), on: mailroom)
    case 11: await lanePoster(Lane11.self, .type(11), on: mailroom)
    case 12: await lanePoster(Lane12.self, .type(12), on: mailroom)
    case 13: await lanePoster(Lane13.self, .type(13), on: mailroom)
    case 14: await lanePoster(Lane14.self, .type(14), on: mailroom)
    default: await lanePoster(Lane15.self, .type(15), on: mailroom)
    }
}

/// What one posting task is given: a room of one type, or a type of its own.
enum Lane {
    case room(Int)
    case type(Int)
}

/// Subscribes once where `lane` says and returns a post to that place. The subscription keeps
/// only the newest mail and nobody reads it: the figure is the posting side's, with no consumer
/// to wake on every post.
func lanePoster<M: Blank>(_ type: M.Type, _ lane: Lane, on mailroom: Mailroom) async -> @Sendable () async -> Void {
    switch lane {
    case .room(let number):
        let stream = await mailroom.subscribe(to: M.self, from: .only(number), bufferingPolicy: .bufferingNewest(1))
        return {
            _ = stream  // kept alive by the poster
            await mailroom.post(M(), from: number)
        }
    case .type:
        let stream = await mailroom.subscribe(to: M.self, bufferingPolicy: .bufferingNewest(1))
        return {
            _ = stream
            await mailroom.post(M())
        }
    }
}

/// Posts per second with `tasks` tasks, each posting `postsEach` times to its own lane, all on one
/// mailroom or, with `separate`, each on a mailroom of its own (the ceiling: nothing shared).
func postsPerSecond(tasks: Int, postsEach: Int, distinctTypes: Bool, separate: Bool = false) async -> Double {
    let mailrooms = (0..<(separate ? tasks : 1)).map { _ in Mailroom() }
    var posters: [@Sendable () async -> Void] = []
    for task in 0..<tasks {
        let mailroom = mailrooms[separate ? task : 0]
        posters.append(
            distinctTypes
                ? await typePoster(task, on: mailroom)
                : await lanePoster(BlankBase.self, .room(task), on: mailroom)
        )
    }
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for post in posters {
            group.addTask {
                for _ in 0..<postsEach { await post() }
            }
        }
    }
    let elapsed = ContinuousClock.now - started
    for mailroom in mailrooms { await mailroom.close() }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(tasks * postsEach) / seconds
}

/// A broadcaster as a user writes one by hand, one per room: a lock around its subscribers'
/// continuations, each post yields to a copy of them. The baseline for rooms with readers.
final class HandBroadcaster<Element: Sendable>: Sendable {
    private let continuations = Mutex<[AsyncStream<Element>.Continuation]>([])

    func subscribe(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        continuations.withLock { $0.append(continuation) }
        return stream
    }

    func send(_ element: Element) {
        for continuation in continuations.withLock({ $0 }) { continuation.yield(element) }
    }

    func finish() {
        for continuation in continuations.withLock({ $0 }) { continuation.finish() }
    }
}

/// Posts per second with `tasks` tasks, each posting `postsEach` times to its own room, each
/// room with one subscriber (newest mail only) that a task of its own reads: through one
/// mailroom, or through a hand-written broadcaster per room.
func postsPerSecondWithReaders(tasks: Int, postsEach: Int, handWritten: Bool) async -> Double {
    let mailroom = Mailroom()
    let broadcasters = (0..<tasks).map { _ in HandBroadcaster<BlankBase>() }
    var streams: [AsyncStream<BlankBase>] = []
    for room in 0..<tasks {
        streams.append(
            handWritten
                ? broadcasters[room].subscribe(bufferingPolicy: .bufferingNewest(1))
                : await mailroom.subscribe(to: BlankBase.self, from: .only(room), bufferingPolicy: .bufferingNewest(1))
        )
    }
    let readers = streams.map { stream in
        Task {
            var read = 0
            for await _ in stream { read += 1 }
            return read
        }
    }
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for room in 0..<tasks {
            group.addTask {
                for _ in 0..<postsEach {
                    if handWritten {
                        broadcasters[room].send(BlankBase())
                    } else {
                        await mailroom.post(BlankBase(), from: room)
                    }
                }
            }
        }
    }
    let elapsed = ContinuousClock.now - started
    await mailroom.close()
    for broadcaster in broadcasters { broadcaster.finish() }
    for reader in readers { _ = await reader.value }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(tasks * postsEach) / seconds
}

/// The p99 of `samples` posts to a quiet type, in nanoseconds, with or without a task fanning out
/// to 1,000 subscribers of another type the whole time.
func quietPostP99(samples: Int, beside loud: Bool) async -> Double {
    let mailroom = Mailroom()
    let quiet = await mailroom.subscribe(to: BlankBase.self, bufferingPolicy: .bufferingNewest(1))
    var crowd: [AsyncStream<BlankUp<BlankBase>>] = []
    for _ in 0..<1_000 {
        crowd.append(await mailroom.subscribe(to: BlankUp<BlankBase>.self, bufferingPolicy: .bufferingNewest(1)))
    }
    let running = ManagedAtomicFlag()
    let fanOut = Task {
        guard loud else { return }
        while !running.isDone { await mailroom.post(BlankUp<BlankBase>()) }
    }
    var latencies: [Double] = []
    latencies.reserveCapacity(samples)
    for _ in 0..<samples {
        let started = ContinuousClock.now
        await mailroom.post(BlankBase())
        let elapsed = ContinuousClock.now - started
        latencies.append(Double(elapsed.components.attoseconds) / 1e9 + Double(elapsed.components.seconds) * 1e9)
    }
    running.finish()
    await fanOut.value
    withExtendedLifetime((quiet, crowd)) {}
    latencies.sort()
    return latencies[Int(Double(latencies.count) * 0.99)]
}

/// A flag one task sets and another polls.
final class ManagedAtomicFlag: Sendable {
    private let done = Atomic(false)

    var isDone: Bool { done.load(ordering: .relaxed) }

    func finish() { done.store(true, ordering: .relaxed) }
}

func runScaling(postsEach: Int) async {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    print("Scaling, \(cores) cores, \(postsEach) posts per task, best of 3")
    for distinctTypes in [false, true] {
        var single = 0.0
        for tasks in [1, 2, 4, 8, 16] {
            var best = 0.0
            for _ in 0..<3 {
                best = max(best, await postsPerSecond(tasks: tasks, postsEach: postsEach, distinctTypes: distinctTypes))
            }
            if tasks == 1 { single = best }
            let shape = distinctTypes ? "distinct types" : "distinct rooms"
            print(
                "\(tasks) tasks on \(shape): \(Int(best)) posts/s | \(String(format: "%.2f", best / single))x one task"
            )
        }
    }
    // Rooms with readers: one mailroom beside a hand-written broadcaster per room, interleaved.
    var singleMailroom = 0.0
    for tasks in [1, 2, 4, 8, 16] {
        var (viaMailroom, handWritten) = (0.0, 0.0)
        for _ in 0..<3 {
            viaMailroom = max(
                viaMailroom,
                await postsPerSecondWithReaders(tasks: tasks, postsEach: postsEach, handWritten: false)
            )
            handWritten = max(
                handWritten,
                await postsPerSecondWithReaders(tasks: tasks, postsEach: postsEach, handWritten: true)
            )
        }
        if tasks == 1 { singleMailroom = viaMailroom }
        print(
            "\(tasks) tasks on rooms with readers: \(Int(viaMailroom)) posts/s | "
                + String(
                    format: "%.2fx one task, %.2fx a hand-written broadcaster per room (%d posts/s)",
                    viaMailroom / singleMailroom,
                    viaMailroom / handWritten,
                    Int(handWritten)
                )
        )
    }
    // The same posts into separate mailrooms, one per task: the ceiling for distinct rooms.
    for tasks in [1, 16] {
        var best = 0.0
        for _ in 0..<3 {
            best = max(
                best,
                await postsPerSecond(tasks: tasks, postsEach: postsEach, distinctTypes: false, separate: true)
            )
        }
        print("\(tasks) tasks on separate mailrooms: \(Int(best)) posts/s")
    }
    let alone = await quietPostP99(samples: 100_000, beside: false)
    let beside = await quietPostP99(samples: 100_000, beside: true)
    print(
        "Quiet-type post p99: \(Int(alone)) ns alone, \(Int(beside)) ns beside a 1,000-subscriber fan-out | \(String(format: "%.2f", beside / alone))x"
    )
}
