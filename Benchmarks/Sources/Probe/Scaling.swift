// `Probe scaling`: what many cores buy. Posting tasks on distinct rooms of one type, and on
// distinct types, as 1, 2, 4, 8 and 16 tasks (posts per second, and the speed-up over one task
// in the same run); and the p99 of a post to a quiet type while another task fans out to 1,000
// subscribers, against the same post's p99 with nothing else running. Every figure is a ratio
// within one run, so it holds on the machine it ran on: print the core count beside it.
import AsyncMail
import Foundation
import Synchronization

/// A mail type made from a depth, so that a benchmark can have as many distinct types as it needs.
protocol Blank: Mail {
    init()
}

struct BlankBase: Blank {
    init() {}
}

struct BlankUp<Below: Blank>: Blank {
    init() {}
}

/// The distinct mail type at `depth`.
func blankType(_ depth: Int) -> any Blank.Type {
    func up<Below: Blank>(_: Below.Type, _ remaining: Int) -> any Blank.Type {
        remaining == 0 ? Below.self : up(BlankUp<Below>.self, remaining - 1)
    }
    return up(BlankBase.self, depth)
}

/// What one posting task is given: a room of one type, or a type of its own.
enum Lane {
    case room(Int)
    case type(Int)
}

/// Subscribes once where `lane` says, with a consumer that drains the stream, and returns a post
/// to that place and the consumer.
func lanePoster<M: Blank>(
    _ type: M.Type,
    _ lane: Lane,
    on mailroom: Mailroom
) async -> (
    post: @Sendable () async -> Void, consumer: Task<Int, Never>
) {
    switch lane {
    case .room(let number):
        let stream = await mailroom.subscribe(to: M.self, from: .only(number), bufferingPolicy: .bufferingNewest(64))
        return ({ await mailroom.post(M(), from: number) }, Task { await stream.reduce(0) { count, _ in count + 1 } })
    case .type:
        let stream = await mailroom.subscribe(to: M.self, bufferingPolicy: .bufferingNewest(64))
        return ({ await mailroom.post(M()) }, Task { await stream.reduce(0) { count, _ in count + 1 } })
    }
}

/// Posts per second with `tasks` tasks, each posting `postsEach` times to its own lane.
func postsPerSecond(tasks: Int, postsEach: Int, distinctTypes: Bool) async -> Double {
    let mailroom = Mailroom()
    var posters: [@Sendable () async -> Void] = []
    var consumers: [Task<Int, Never>] = []
    for task in 0..<tasks {
        let (post, consumer) =
            distinctTypes
            ? await lanePoster(blankType(task), .type(task), on: mailroom)
            : await lanePoster(BlankBase.self, .room(task), on: mailroom)
        posters.append(post)
        consumers.append(consumer)
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
    await mailroom.close()
    for consumer in consumers { _ = await consumer.value }
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

func runScaling() async {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let postsEach = 200_000
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
    let alone = await quietPostP99(samples: 100_000, beside: false)
    let beside = await quietPostP99(samples: 100_000, beside: true)
    print(
        "Quiet-type post p99: \(Int(alone)) ns alone, \(Int(beside)) ns beside a 1,000-subscriber fan-out | \(String(format: "%.2f", beside / alone))x"
    )
}
