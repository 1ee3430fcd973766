// The hubs a user writes instead of a mailroom (#55), written as a user would, no tricks, beside a
// `Mailroom` doing the same work: ROOMS rooms with one reading task each, POSTS lines posted
// round-robin by one poster, timed from the first post until every reader has its lines. The
// shapes take turns in each round, each on a fresh hub, and the medians of the rounds are printed
// with their ratio to the hub.
//
//   swift run -c release --package-path Benchmarks Probe hubs [ROUNDS [POSTS [ROOMS [NAME]]]]
//
// With NAME, only the shapes whose name contains it run (for a profiler), without ratios.
import AsyncMail
import Foundation
import Synchronization

struct Line: Mail {
    let room: String
    let sequence: Int
}

/// A lock around a dictionary of continuations: the hub most people write.
final class LockHub: Sendable {
    private let rooms = Mutex<[String: [AsyncStream<Line>.Continuation]]>([:])

    func subscribe(_ room: String) -> AsyncStream<Line> {
        let (stream, continuation) = AsyncStream.makeStream(of: Line.self)
        rooms.withLock { $0[room, default: []].append(continuation) }
        return stream
    }

    func post(_ line: Line) {
        let continuations = rooms.withLock { $0[line.room] ?? [] }
        for continuation in continuations { continuation.yield(line) }
    }

    func finish() {
        rooms.withLock { rooms in
            for continuation in rooms.values.joined() { continuation.finish() }
        }
    }
}

/// The same hub as an actor.
actor ActorHub {
    private var rooms: [String: [AsyncStream<Line>.Continuation]] = [:]

    func subscribe(_ room: String) -> AsyncStream<Line> {
        let (stream, continuation) = AsyncStream.makeStream(of: Line.self)
        rooms[room, default: []].append(continuation)
        return stream
    }

    func post(_ line: Line) {
        for continuation in rooms[line.room] ?? [] { continuation.yield(line) }
    }

    func finish() {
        for continuation in rooms.values.joined() { continuation.finish() }
    }
}

/// The lock hub keeping each room's last `keep` lines with a sequence number, for a client
/// coming back.
final class KeepingHub: Sendable {
    private struct Room {
        var continuations: [AsyncStream<Line>.Continuation] = []
        var kept: [(sequence: Int, line: Line)] = []
        var next = 1
    }

    private let rooms = Mutex<[String: Room]>([:])
    private let keep: Int

    init(keep: Int) { self.keep = keep }

    func subscribe(_ room: String) -> AsyncStream<Line> {
        let (stream, continuation) = AsyncStream.makeStream(of: Line.self)
        rooms.withLock { $0[room, default: Room()].continuations.append(continuation) }
        return stream
    }

    func post(_ line: Line) {
        let continuations = rooms.withLock { rooms in
            var room = rooms.removeValue(forKey: line.room) ?? Room()
            room.kept.append((room.next, line))
            room.next += 1
            if room.kept.count > keep { room.kept.removeFirst(room.kept.count - keep) }
            let continuations = room.continuations
            rooms[line.room] = room
            return continuations
        }
        for continuation in continuations { continuation.yield(line) }
    }

    func finish() {
        rooms.withLock { rooms in
            for continuation in rooms.values.flatMap(\.continuations) { continuation.finish() }
        }
    }
}

/// One shape: subscribes a reader to every room, then returns the timed part, which posts and
/// waits for every reader.
private struct HubShape {
    let name: String
    let baseline: String?
    let run: @Sendable (_ posts: Int, _ rooms: [String]) async -> Duration
}

/// Starts a reading task per stream, each expecting `each` lines; returns them to await.
private func readers(_ streams: [AsyncStream<Line>], each: Int) -> [Task<Void, Never>] {
    streams.map { stream in
        Task {
            var count = 0
            for await _ in stream {
                count += 1
                if count == each { return }
            }
        }
    }
}

/// Times posting `posts` lines round-robin over `rooms` with `post`, until `readers` have them all.
private func timed(
    posts: Int,
    rooms: [String],
    readers: [Task<Void, Never>],
    post: (Line) async -> Void
) async -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    for sequence in 0..<posts { await post(Line(room: rooms[sequence % rooms.count], sequence: sequence)) }
    for reader in readers { await reader.value }
    return clock.now - start
}

/// A mailroom (keeping `history` lines a room, if given) with a reader subscribed to every room,
/// and those readers, each expecting `each` lines.
private func mailroomWithReaders(
    _ rooms: [String],
    each: Int,
    history: Int? = nil
) async -> (Mailroom, [Task<Void, Never>]) {
    let mailroom = Mailroom()
    if let history { await mailroom.retainHistory(Line.self, count: history) }
    var streams: [AsyncStream<Line>] = []
    for room in rooms { streams.append(await mailroom.subscribe(to: Line.self, from: .only(room))) }
    return (mailroom, readers(streams, each: each))
}

private let hubShapes: [HubShape] = [
    HubShape(name: "lock hub", baseline: nil) { posts, rooms in
        let hub = LockHub()
        let tasks = readers(rooms.map(hub.subscribe), each: posts / rooms.count)
        defer { hub.finish() }
        return await timed(posts: posts, rooms: rooms, readers: tasks) { hub.post($0) }
    },
    HubShape(name: "Mailroom post", baseline: "lock hub") { posts, rooms in
        let (mailroom, tasks) = await mailroomWithReaders(rooms, each: posts / rooms.count)
        return await timed(posts: posts, rooms: rooms, readers: tasks) { await mailroom.post($0, from: $0.room) }
    },
    HubShape(name: "Mailroom postSynchronously", baseline: "lock hub") { posts, rooms in
        let (mailroom, tasks) = await mailroomWithReaders(rooms, each: posts / rooms.count)
        return await timed(posts: posts, rooms: rooms, readers: tasks) { mailroom.postSynchronously($0, from: $0.room) }
    },
    HubShape(name: "actor hub", baseline: nil) { posts, rooms in
        let hub = ActorHub()
        var streams: [AsyncStream<Line>] = []
        for room in rooms { streams.append(await hub.subscribe(room)) }
        let tasks = readers(streams, each: posts / rooms.count)
        let elapsed = await timed(posts: posts, rooms: rooms, readers: tasks) { await hub.post($0) }
        await hub.finish()
        return elapsed
    },
    HubShape(name: "Mailroom post (vs actor)", baseline: "actor hub") { posts, rooms in
        let (mailroom, tasks) = await mailroomWithReaders(rooms, each: posts / rooms.count)
        return await timed(posts: posts, rooms: rooms, readers: tasks) { await mailroom.post($0, from: $0.room) }
    },
    HubShape(name: "hub keeping 100", baseline: nil) { posts, rooms in
        let hub = KeepingHub(keep: 100)
        let tasks = readers(rooms.map(hub.subscribe), each: posts / rooms.count)
        defer { hub.finish() }
        return await timed(posts: posts, rooms: rooms, readers: tasks) { hub.post($0) }
    },
    HubShape(name: "Mailroom retainHistory(count: 100)", baseline: "hub keeping 100") { posts, rooms in
        let (mailroom, tasks) = await mailroomWithReaders(rooms, each: posts / rooms.count, history: 100)
        return await timed(posts: posts, rooms: rooms, readers: tasks) { await mailroom.post($0, from: $0.room) }
    },
]

func runHubs(rounds: Int, posts: Int, roomCount: Int, only name: String? = nil) async {
    let rooms = (0..<roomCount).map { "room \($0)" }
    let shapes = hubShapes.filter { shape in name.map { shape.name.contains($0) } ?? true }
    var samples: [String: [Double]] = [:]
    for _ in 0..<rounds {
        for shape in shapes {
            let elapsed = await shape.run(posts, rooms)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            samples[shape.name, default: []].append(seconds / Double(posts) * 1e9)
        }
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    print("\(roomCount) rooms with a reader each, \(posts) posts round-robin, median of \(rounds) rounds taking turns")
    for shape in shapes {
        let nanoseconds = median(samples[shape.name]!)
        var line = shape.name.padding(toLength: 36, withPad: " ", startingAt: 0)
        line += String(format: "%7.0f ns a post", nanoseconds)
        if let baseline = shape.baseline, let baselineSamples = samples[baseline] {
            // The ratio as "speed against the hub": the hub's time over the mailroom's. Also the
            // median of each round's own ratio: a round runs the hub and the mailroom a few
            // seconds apart, so a slow spell of the machine weighs on both sides of it.
            let perRound = zip(baselineSamples, samples[shape.name]!).map { $0 / $1 }
            line += String(
                format: "   %.2fx %@ (rounds: median %.2fx, %.2f-%.2fx)",
                median(baselineSamples) / nanoseconds,
                baseline,
                median(perRound),
                perRound.min()!,
                perRound.max()!
            )
        }
        print(line)
    }
}
