// The relay against the engine's own ceiling, in one run, on loopback:
//
//   eval "$(Scripts/postgres.sh start)"
//   swift run -c release --package-path Relays/Postgres RelayBench
//
// - bare: postgres-nio alone, pg_notify on one connection and LISTEN on another; one at a time
//   (a round trip per mail), and batched (unnest of 100 payloads per statement);
// - relay: a mailroom's posts, relayed to a second mailroom, durable and ephemeral, with 100-byte
//   and 4 KB mails, as fast as they can be posted: mails/s until the last one is received;
// - latency: posts paced at 1,000 and 5,000 mails/s, the time from post to receipt, p50 and p99;
//   and with fleet-wide positions, on the posting instance too (it delivers at once without them);
// - fleet (BENCH_ONLY=fleet): fleet-wide positions, two instances posting to 1 and to 64 rooms at
//   once, as fast as they can: mails/s until both instances have heard every mail.
// Results are printed as "name: value | note" lines; figures belong in Benchmarks/README.md.
import AsyncMail
import AsyncMailPostgres
import Foundation
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

struct Payload: Mail, Codable {
    let sent: UInt64  // DispatchTime nanoseconds: both relays run in this process
    let body: String
}

/// Where to connect and how quietly, shared by every measurement.
enum Bench {
    static let environment = ProcessInfo.processInfo.environment
    static let configuration: PostgresConnection.Configuration = {
        do { return try PostgresRelay.connectionFromEnvironment() } catch { fatalError("\(error)") }
    }()
    static let logger: Logger = {
        var logger = Logger(label: "RelayBench")
        logger.logLevel = environment["BENCH_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// One result line, written at once (unbuffered, also into a pipe).
func report(_ name: String, _ value: String, _ note: String = "") {
    let line = "\(name): \(value)" + (note.isEmpty ? "" : " | \(note)") + "\n"
    FileHandle.standardOutput.write(Data(line.utf8))
}

func rate(_ count: Int, since start: UInt64) -> Double {
    Double(count) / (Double(now() - start) / 1e9)
}

// MARK: The engine alone

/// pg_notify → LISTEN with postgres-nio alone: `count` payloads, `batch` per statement. Waiting,
/// each statement waits for its payloads to arrive before the next (batch 1 is a round trip per
/// mail); pipelined, statements go back to back and the clock stops at the last arrival.
/// `alsoListening` more connections listen on the channel and drain it, as a fleet's other
/// relays (and the sending relay itself) do.
func bare(count: Int, batch: Int, bytes: Int, pipelined: Bool, alsoListening: Int = 0) async throws -> Double {
    let channel = "bench_bare_\(UInt32.random(in: 0...UInt32.max))"
    var others: [(PostgresConnection, Task<Void, any Error>)] = []
    for index in 0..<alsoListening {
        let other = try await PostgresConnection.connect(
            configuration: Bench.configuration,
            id: 10 + index,
            logger: Bench.logger
        )
        let (ready, isReady) = AsyncStream.makeStream(of: Void.self)
        let draining = Task {
            try await other.listen(on: channel) { notifications in
                isReady.yield()
                for try await _ in notifications {}
            }
        }
        for await _ in ready { break }
        others.append((other, draining))
    }
    let listener = try await PostgresConnection.connect(configuration: Bench.configuration, id: 1, logger: Bench.logger)
    let sender = try await PostgresConnection.connect(configuration: Bench.configuration, id: 2, logger: Bench.logger)
    let body = String(repeating: "x", count: bytes)
    let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
    let listening = Task {
        try await listener.listen(on: channel) { notifications in
            arrived.yield()  // LISTEN is in place
            for try await _ in notifications { arrived.yield() }
        }
    }
    var iterator = arrivals.makeAsyncIterator()
    _ = await iterator.next()
    let start = now()
    let (sent, nextStatement) = AsyncStream.makeStream(of: Void.self)
    let sending = Task {
        var sent = sent.makeAsyncIterator()
        for statement in 0..<(count / batch) {
            // Distinct: PostgreSQL delivers identical payloads of one transaction only once.
            let payloads = (0..<batch).map { "\(statement).\($0) " + body }
            try await sender.query(
                "SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) AS p",
                logger: Bench.logger
            )
            if !pipelined { _ = await sent.next() }
        }
    }
    for arrival in 1...count {
        _ = await iterator.next()
        if !pipelined, arrival % batch == 0 { nextStatement.yield() }
    }
    let result = rate(count, since: start)
    try await sending.value
    listening.cancel()
    try? await listener.close()
    for (other, draining) in others {
        draining.cancel()
        try? await other.close()
    }
    try? await sender.close()
    return result
}

// MARK: The relay

/// Two mailrooms, each with a relay on one fresh channel; `body` runs with the sending mailroom
/// and the receiving subscription.
func withRelays<T>(
    mode: PostgresRelay.Mode,
    _ body: (Mailroom, AsyncStream<Payload>) async throws -> T
) async throws -> T {
    let channel = try RelayChannel("bench_relay_\(UInt32.random(in: 0...UInt32.max))")
    let (here, there) = (Mailroom(), Mailroom())
    var relays: [PostgresRelay] = []
    var running: [Task<Void, any Error>] = []
    for mailroom in [here, there] {
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: Bench.configuration,
            configuration: .init(channel: channel, mode: mode, outboundQueueLimit: 1_000_000),
            logger: Bench.logger
        )
        try relay.register(Payload.self, as: "bench.payload")
        let events = relay.events()
        running.append(Task { try await relay.run() })
        for await event in events where event == .listening { break }
        relays.append(relay)
    }
    let received = await there.subscribe(to: Payload.self)
    let result = try await body(here, received)
    for task in running { task.cancel() }
    for task in running { _ = try? await task.value }
    return result
}

/// Posts `count` mails of `bytes` as fast as posting goes; mails/s until the last is received.
func relayThroughput(mode: PostgresRelay.Mode, count: Int, bytes: Int) async throws -> Double {
    try await withRelays(mode: mode) { here, received in
        let body = String(repeating: "y", count: bytes)
        let start = now()
        let posting = Task {
            for _ in 0..<count {
                await here.post(Payload(sent: 0, body: body))
                await Task.yield()
            }
        }
        var heard = 0
        for await _ in received {
            heard += 1
            if heard == count { break }
        }
        await posting.value
        return rate(count, since: start)
    }
}

/// Posts `count` mails of 100 bytes at `perSecond`; post-to-receipt latency, p50 and p99 in ms.
func relayLatency(mode: PostgresRelay.Mode, perSecond: Int, count: Int) async throws -> (Double, Double) {
    try await withRelays(mode: mode) { here, received in
        let body = String(repeating: "z", count: 100)
        let clock = ContinuousClock()
        let posting = Task {
            let start = clock.now
            for number in 0..<count {
                try await clock.sleep(until: start + .nanoseconds(Int64(number) * 1_000_000_000 / Int64(perSecond)))
                await here.post(Payload(sent: now(), body: body))
            }
        }
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        for await payload in received {
            latencies.append(Double(now() - payload.sent) / 1e6)
            if latencies.count == count { break }
        }
        try await posting.value
        latencies.sort()
        return (latencies[count / 2], latencies[count * 99 / 100])
    }
}

/// Fleet-wide positions (durable mode): posts of 100 bytes at `perSecond` reach subscribers on
/// the posting instance only once their row is committed and read back. Latency from post to
/// receipt, p50 and p99 in ms, here (the cost of the table's order) and on the other instance.
func fleetWideLatency(perSecond: Int, count: Int) async throws -> (here: (Double, Double), there: (Double, Double)) {
    let channel = try RelayChannel("bench_fleet_\(UInt32.random(in: 0...UInt32.max))")
    let (here, there) = (Mailroom(), Mailroom())
    var running: [Task<Void, any Error>] = []
    for mailroom in [here, there] {
        await mailroom.retainHistory(Payload.self, count: 1_000)
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: Bench.configuration,
            configuration: .init(channel: channel, outboundQueueLimit: 1_000_000),
            logger: Bench.logger
        )
        try relay.register(Payload.self, as: "bench.payload", positions: .fleetWide)
        let events = relay.events()
        running.append(Task { try await relay.run() })
        for await event in events where event == .listening { break }
    }
    let streams = [await here.subscribe(to: Payload.self), await there.subscribe(to: Payload.self)]
    let body = String(repeating: "z", count: 100)
    let clock = ContinuousClock()
    let posting = Task {
        let start = clock.now
        for number in 0..<count {
            try await clock.sleep(until: start + .nanoseconds(Int64(number) * 1_000_000_000 / Int64(perSecond)))
            await here.post(Payload(sent: now(), body: body))
        }
    }
    // Both at once, so that neither waits in its buffer while the other is read.
    let percentiles = await withTaskGroup(of: (Int, Double, Double).self) { group in
        for (index, stream) in streams.enumerated() {
            group.addTask {
                var latencies: [Double] = []
                latencies.reserveCapacity(count)
                for await payload in stream {
                    latencies.append(Double(now() - payload.sent) / 1e6)
                    if latencies.count == count { break }
                }
                latencies.sort()
                return (index, latencies[count / 2], latencies[count * 99 / 100])
            }
        }
        var found = [(Double, Double)](repeating: (0, 0), count: streams.count)
        for await (index, p50, p99) in group { found[index] = (p50, p99) }
        return found
    }
    try await posting.value
    for task in running { task.cancel() }
    for task in running { _ = try? await task.value }
    return (percentiles[0], percentiles[1])
}

/// A room of the fleet benchmark: a sender that travels.
struct BenchRoom: Hashable, Sendable, Codable {
    let number: Int
}

/// Fleet-wide positions (durable mode): two instances each post `count / 2` mails of 100 bytes to
/// `rooms` rooms, round robin, as fast as posting goes; mails/s until both have heard all `count`.
func fleetWideThroughput(rooms: Int, count: Int) async throws -> Double {
    let channel = try RelayChannel("bench_fleet_\(UInt32.random(in: 0...UInt32.max))")
    let instances = [Mailroom(), Mailroom()]
    var running: [Task<Void, any Error>] = []
    for mailroom in instances {
        await mailroom.retainHistory(Payload.self, count: 1_000)
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: Bench.configuration,
            configuration: .init(channel: channel, outboundQueueLimit: 1_000_000),
            logger: Bench.logger
        )
        try relay.register(Payload.self, as: "bench.payload", positions: .fleetWide)
        try relay.register(sender: BenchRoom.self, as: "bench.room")
        let events = relay.events()
        running.append(Task { try await relay.run() })
        for await event in events where event == .listening { break }
    }
    var streams: [AsyncStream<Payload>] = []
    for mailroom in instances { streams.append(await mailroom.subscribe(to: Payload.self)) }
    let body = String(repeating: "f", count: 100)
    let start = now()
    let posting = instances.enumerated().map { index, mailroom in
        Task {
            for number in 0..<(count / 2) {
                await mailroom.post(Payload(sent: 0, body: body), from: BenchRoom(number: (number * 2 + index) % rooms))
                await Task.yield()
            }
        }
    }
    await withTaskGroup(of: Void.self) { group in
        for stream in streams {
            group.addTask {
                var heard = 0
                for await _ in stream {
                    heard += 1
                    if heard == count / 2 * 2 { break }
                }
            }
        }
    }
    let result = rate(count / 2 * 2, since: start)
    for task in posting { await task.value }
    for task in running { task.cancel() }
    for task in running { _ = try? await task.value }
    return result
}

/// What the relay's codec costs one mail, in microseconds: `MailEncoder` on the way out (one per
/// forwarding loop), `MailDecoder` on the way in (one per envelope, here one per mail).
func codecMicroseconds(bytes: Int) throws -> Double {
    let payload = Payload(sent: 1, body: String(repeating: "c", count: bytes))
    let rounds = 20_000
    let encoder = MailEncoder()
    let start = now()
    for _ in 0..<rounds {
        let text = String(decoding: try encoder.encode(payload), as: UTF8.self)
        _ = try MailDecoder().decode(Payload.self, from: Substring(text))
    }
    return Double(now() - start) / 1e3 / Double(rounds)
}

let count = Bench.environment["BENCH_COUNT"].flatMap(Int.init) ?? 20_000
// Throughput runs are short and this machine is noisy: each round measures the ceiling and the
// relay back to back, and the ratio reported is the median of the rounds' ratios.
let rounds = Bench.environment["BENCH_ROUNDS"].flatMap(Int.init) ?? 5
// For a profiler: BENCH_ONLY=relay runs only the relay's throughput, BENCH_BYTES=4000 one size,
// BENCH_MODE=ephemeral one mode. BENCH_ONLY=bare runs only the ceiling, each round reported, with
// BENCH_ALSO_LISTENING more connections listening. BENCH_ONLY=latency runs only the latencies.
let only = Bench.environment["BENCH_ONLY"]
let sizes = Bench.environment["BENCH_BYTES"].flatMap(Int.init).map { [$0] } ?? [100, 4_000]
let modes = [("ephemeral", PostgresRelay.Mode.ephemeral), ("durable", .durable())].filter {
    Bench.environment["BENCH_MODE"] == nil || Bench.environment["BENCH_MODE"] == $0.0
}
if only == "bare" {
    let alsoListening = Bench.environment["BENCH_ALSO_LISTENING"].flatMap(Int.init) ?? 0
    for bytes in sizes {
        for _ in 0..<rounds {
            let ceiling = try await bare(
                count: count,
                batch: 100,
                bytes: bytes,
                pipelined: true,
                alsoListening: alsoListening
            )
            report(
                "bare NOTIFY, batches of 100, pipelined, \(bytes) B, \(1 + alsoListening) listening",
                String(format: "%.0f mails/s", ceiling)
            )
        }
    }
    exit(0)
}
/// Latencies at paced rates, each mode's and the fleet-wide positions', reported as they come.
func reportLatencies() async throws {
    for perSecond in [1_000, 5_000] {
        for (name, mode) in modes {
            let (p50, p99) = try await relayLatency(mode: mode, perSecond: perSecond, count: perSecond * 3)
            report("relay \(name) latency at \(perSecond)/s", String(format: "p50 %.2f ms, p99 %.2f ms", p50, p99))
        }
        let fleet = try await fleetWideLatency(perSecond: perSecond, count: perSecond * 3)
        report(
            "relay durable, fleet-wide positions, latency at \(perSecond)/s",
            String(
                format: "here p50 %.2f ms, p99 %.2f ms; there p50 %.2f ms, p99 %.2f ms",
                fleet.here.0,
                fleet.here.1,
                fleet.there.0,
                fleet.there.1
            ),
            "here: the posting instance, which delivers at once without them"
        )
    }
}
if only == "latency" {
    try await reportLatencies()
    exit(0)
}
if only == "fleet" {
    for rooms in [1, 64] {
        var rates: [Double] = []
        for _ in 0..<rounds { rates.append(try await fleetWideThroughput(rooms: rooms, count: count)) }
        report(
            "relay durable, fleet-wide positions, two instances posting to \(rooms) room(s)",
            String(format: "%.0f mails/s", rates.sorted()[rates.count / 2]),
            "median of \(rounds) rounds: " + rates.map { String(format: "%.0f", $0) }.joined(separator: " ")
        )
    }
    exit(0)
}
if only == "relay" {
    for bytes in sizes {
        for (name, mode) in modes {
            let relayed = try await relayThroughput(mode: mode, count: count, bytes: bytes)
            report("relay \(name), \(bytes) B", String(format: "%.0f mails/s", relayed))
        }
    }
    exit(0)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

for bytes in sizes {
    let single = try await bare(count: 2_000, batch: 1, bytes: bytes, pipelined: false)
    report("bare round trip, one at a time, \(bytes) B", String(format: "%.0f mails/s", single))
    var ceilings: [Double] = []
    var relayed: [String: [Double]] = [:]
    var ratios: [String: [Double]] = [:]
    for _ in 0..<rounds {
        let ceiling = try await bare(count: count, batch: 100, bytes: bytes, pipelined: true)
        ceilings.append(ceiling)
        for (name, mode) in modes {
            let rate = try await relayThroughput(mode: mode, count: count, bytes: bytes)
            relayed[name, default: []].append(rate)
            ratios[name, default: []].append(rate / ceiling)
        }
    }
    report(
        "bare NOTIFY, batches of 100, pipelined, \(bytes) B",
        String(format: "%.0f mails/s", median(ceilings)),
        "the ceiling, median of \(rounds) rounds"
    )
    for (name, _) in modes {
        report(
            "relay \(name), \(bytes) B",
            String(format: "%.0f mails/s", median(relayed[name]!)),
            String(
                format: "%.2fx the ceiling, median of the rounds' ratios %@ (target >= 0.5x)",
                median(ratios[name]!),
                ratios[name]!.map { String(format: "%.2f", $0) }.joined(separator: " ")
            )
        )
    }
}
for bytes in [100, 4_000] {
    report("codec, encode + decode one \(bytes) B mail", String(format: "%.1f µs", try codecMicroseconds(bytes: bytes)))
}
try await reportLatencies()
