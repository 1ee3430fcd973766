// The floor the embedded relay stands on, between two processes on one host: a writer appends
// 100-byte rows and nudges, a second process (this program, run again as `read`) reads them
// through the row feed. Measured in one run:
//   - latency, from the writer's append to the reader's read, at 1,000 rows/s, one row a commit;
//   - throughput, the writer appending as fast as it can in batches, until the reader has read
//     everything, against the baseline of the same batched inserts with nobody reading.
//
//   swift run -c release --package-path Relays/SQLite SQLiteBench [ROWS]     default 5,000
//
// `SQLiteBench relay [MAILS]` measures the relay itself the same way, mailroom to mailroom: a
// process posts 100-byte mails (at 1,000 a second, then in batches of 100 as fast as they go)
// and a second process's subscription receives them, against the same plain batched inserts.
// `SQLiteBench compare [MAILS] [ROUNDS]` runs the relay, the loop a user writes instead (a plain
// table and a reader that polls every millisecond, Poller.swift) and the plain batched inserts in
// one run, quiet and then with every core kept busy, with the CPU both processes use per mail
// (quiet only: busy, the spinning threads share the poster's process). A second poller, whose
// rows are the mail encoded as JSON, shows what the relay's encoding costs. Each takes ROUNDS
// turns (default 3), one after the other; the figures are the medians of the rounds' ratios.
// `SQLiteBench cpu [MAILS] [ROUNDS]` measures only compare's CPU per mail as fast as they go, with
// more mails (300,000 by default), and `SQLiteBench codec [ROUNDS]` times the relay's JSON codec
// against Foundation's `JSONEncoder` and `JSONDecoder`.
import AsyncMail
import AsyncMailSQLite
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let logger = Logger(label: "SQLiteBench")
let payloadBytes = 100

/// CLOCK_MONOTONIC, which every process on the host shares.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// A row's payload: when it was due (`due`, or else now) and when it was made, padded to
/// `payloadBytes`.
func payload(stamp due: UInt64? = nil) -> String {
    let made = monotonicNanoseconds()
    let stamps = String(due ?? made) + "|" + String(made)
    return stamps + "|" + String(repeating: "x", count: max(payloadBytes - stamps.count - 1, 0))
}

/// The latencies a reader takes, in ms: from when each mail was due, and from when it was made
/// (its post began). See ``measure(mails:reader:postOne:postHundred:flush:)`` for why both.
struct Latencies {
    var fromDue: [Double] = []
    var fromPost: [Double] = []

    var count: Int { fromDue.count }

    /// Takes the stamps at the start of `text` (``payload(stamp:)``), read at `now`.
    mutating func add(_ text: some StringProtocol, at now: UInt64) {
        let stamps = text.split(separator: "|", maxSplits: 2)
        guard stamps.count >= 2, let due = UInt64(stamps[0]), let made = UInt64(stamps[1]) else { return }
        fromDue.append(Double(now &- due) / 1_000_000)
        fromPost.append(Double(now &- made) / 1_000_000)
    }

    /// p50, p99 and max from when due, then the same from when posted.
    func summary() -> String {
        [fromDue.sorted(), fromPost.sorted()].map { percentiles($0) ?? "0 0 0" }.joined(separator: " ")
    }
}

/// Runs `database`'s background checkpoints, as a relay does, until the task is cancelled.
func checkpointing(_ database: RelayDatabase) -> Task<Void, Never> {
    Task { await database.keepCheckpointing(logger: logger) }
}

/// A line on standard output, at once: the parent waits for it on a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(Int(Double(sorted.count) * fraction), sorted.count - 1)]
}

/// "p50 p99 max" of `sorted`, to three places; nil when it is empty.
func percentiles(_ sorted: [Double]) -> String? {
    guard let last = sorted.last else { return nil }
    return String(format: "%.3f %.3f %.3f", percentile(sorted, 0.5), percentile(sorted, 0.99), last)
}

/// The reader: reads `count` rows after `cursor`, then prints their latencies' percentiles.
func read(path: String, count: Int, after cursor: Int64) async throws {
    let database = try await RelayDatabase.open(path: path)
    let wakeUps = try await WakeUps.open(beside: path, name: "reader")
    let feed = RowFeed(
        database: database,
        wakeUps: wakeUps,
        batch: 1_000,
        maximumBytes: 4_096,
        safetyNet: .milliseconds(500)
    )
    say("ready")
    var latencies = Latencies()
    for try await batch in feed.rows(after: cursor) {
        let now = monotonicNanoseconds()
        for row in batch {
            if let payload = row.payload { latencies.add(payload, at: now) }
        }
        if latencies.count >= count { break }
    }
    // Appended as they were made: the first three are the latencies from the append.
    say(latencies.summary())
    await wakeUps.close()
    await database.close()
}

/// Runs this program as the reader of `count` rows after `cursor`; returns it once it is ready.
func startReader(path: String, count: Int, after cursor: Int64) throws -> (Process, FileHandle) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["read", path, String(count), String(cursor)]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    _ = readLine(from: output.fileHandleForReading)  // "ready"
    return (process, output.fileHandleForReading)
}

func readLine(from handle: FileHandle) -> String? {
    var line = Data()
    while true {
        let byte = handle.readData(ofLength: 1)
        if byte.isEmpty { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
        if byte[0] == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
        line.append(byte)
    }
}

/// The relay bench's mail: its text is when it was posted, padded to `payloadBytes`.
struct BenchMail: Mail, Codable {
    let text: String
}

/// A relay on `path` carrying `BenchMail`, with the default settings a user gets: past the
/// outbound queue's 10,000 mails, posts wait for room. Its metrics go to `metrics`, if given.
func benchRelay(_ mailroom: Mailroom, path: String, metrics: KeptTimer? = nil) throws -> SQLiteRelay {
    let relay = try SQLiteRelay(
        mailroom: mailroom,
        path: path,
        configuration: .init(metricsFactory: metrics),
        logger: logger
    )
    try relay.register(BenchMail.self, as: "bench")
    return relay
}

/// Runs `relay` in a task, and returns once it reads.
func run(_ relay: SQLiteRelay) async -> Task<Void, any Error> {
    let events = relay.events()
    let task = Task { try await relay.run() }
    for await event in events where event.code == .listening { break }
    return task
}

/// The relay's reader: receives `count` mails in its mailroom, then prints their latencies and
/// the CPU seconds it used since it was ready.
func readRelayed(path: String, count: Int) async throws {
    let mailroom = Mailroom()
    let mails = await mailroom.subscribe(to: BenchMail.self)
    let lags = KeptTimer("asyncmail.relay.receive.lag")
    let task = await run(try benchRelay(mailroom, path: path, metrics: lags))
    let cpuAtStart = cpuSeconds()
    say("ready")
    var latencies = Latencies()
    for await mail in mails {
        latencies.add(mail.text, at: monotonicNanoseconds())
        if latencies.count >= count { break }
    }
    say(latencies.summary() + " " + lags.take() + String(format: " %.3f", cpuSeconds() - cpuAtStart))
    task.cancel()
    _ = await task.result
}

/// Runs this program as the relay's reader of `count` mails; returns it once it reads.
func startRelayReader(path: String, count: Int) throws -> (Process, FileHandle) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["relay-read", path, String(count)]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    _ = readLine(from: output.fileHandleForReading)  // "ready"
    return (process, output.fileHandleForReading)
}

func perSecond(_ count: Int, _ duration: Duration) -> Int {
    Int(Double(count) / (Double(duration.components.attoseconds) / 1e18 + Double(duration.components.seconds)))
}

/// The relay, mailroom to mailroom between two processes, default settings. Without `pacing`,
/// only the run as fast as they go.
func measureRelay(mails: Int, folder: String, pacing: Bool = true) async throws -> Measured {
    let path = folder + "/relay.sqlite"
    let mailroom = Mailroom()
    let durations = KeptTimer("messaging.client.operation.duration")
    let relay = try benchRelay(mailroom, path: path, metrics: durations)
    let task = await run(relay)
    var queueToCommit = "-"
    var measured = try await measure(
        mails: mails,
        pacing: pacing,
        reader: { try startRelayReader(path: path, count: $0) },
        postOne: { await mailroom.post(BenchMail(text: payload(stamp: $0))) },
        pacedDone: { queueToCommit = durations.take() },
        postHundred: { await mailroom.post(contentsOf: (0..<100).map { _ in BenchMail(text: payload()) }) },
        flush: { try await relay.flush() }
    )
    measured.queueToCommit = queueToCommit
    task.cancel()
    _ = await task.result
    return measured
}

/// One contender's two runs, the same for each: one mail a post at 1,000 a second, then posts
/// of 100 mails as fast as they go, until the reader `reader` starts in another process has
/// them all. CPU is both processes'.
///
/// At 1,000 a second each mail is stamped with the time it was due, not the time its post
/// began: a post that stalls (a commit waiting on the disk) delays the mails due meanwhile, and
/// their latency counts it, whether the post blocked the loop (the poller's `INSERT`) or queued
/// them (the relay). Stamped when posted, a blocking contender's stall would hide in the mails
/// it kept from being posted (coordinated omission). Without `pacing`, only the second run.
func measure(
    mails: Int,
    pacing: Bool = true,
    reader startReader: (_ count: Int) throws -> (Process, FileHandle),
    postOne: (_ due: UInt64) async throws -> Void,
    pacedDone: () -> Void = {},
    postHundred: () async throws -> Void,
    flush: () async throws -> Void
) async throws -> Measured {
    let clock = ContinuousClock()
    var measured = Measured()

    if pacing {
        let (reader, output) = try startReader(mails)
        let pacedCPU = cpuSeconds()
        let start = clock.now
        let startNanoseconds = monotonicNanoseconds()
        for index in 0..<mails {
            try await postOne(startNanoseconds + UInt64(index) * 1_000_000)
            try await clock.sleep(until: start + .milliseconds(index + 1))
        }
        let line = readLine(from: output)
        measured = Measured(reader: line)
        pacedDone()
        measured.cpuPerThousandPaced = (cpuSeconds() - pacedCPU + Measured.cpu(line)) / Double(mails) * 1_000
        reader.waitUntilExit()
    }

    let throughputMails = mails * 10
    let (reader, output) = try startReader(throughputMails)
    let cpuBefore = cpuSeconds()
    var readerCPU = 0.0
    let took = try await clock.measure {
        for _ in 0..<(throughputMails / 100) { try await postHundred() }
        try await flush()
        readerCPU = Measured.cpu(readLine(from: output))
        reader.waitUntilExit()
    }
    measured.throughput = perSecond(throughputMails, took)
    measured.cpuPerThousand = (cpuSeconds() - cpuBefore + readerCPU) / Double(throughputMails) * 1_000
    return measured
}

/// The ceiling: the same mails as plain batched inserts of 100 rows into the relay's table,
/// with its storage settings and checkpoints, nobody reading. Rows a second.
func measureInserts(mails: Int, folder: String) async throws -> Int {
    let database = try await RelayDatabase.open(path: folder + "/plain.sqlite")
    let checkpoints = checkpointing(database)
    let throughputMails = mails * 10
    let inserted = try await ContinuousClock().measure {
        for _ in 0..<(throughputMails / 100) { _ = try await database.append((0..<100).map { _ in payload() }, at: 0) }
    }
    checkpoints.cancel()
    await database.close()
    return perSecond(throughputMails, inserted)
}

/// A fresh folder for one run's files, removed by `body`'s end.
func inFolder<Result>(_ name: String, _ body: (String) async throws -> Result) async throws -> Result {
    let folder = NSTemporaryDirectory() + "sqlitebench-\(name)-\(getpid())"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    return try await body(folder)
}

/// The relay against plain batched inserts.
func benchRelay(mails: Int) async throws {
    let relay = try await inFolder("relay") { try await measureRelay(mails: mails, folder: $0) }
    let inserts = try await inFolder("inserts") { try await measureInserts(mails: mails, folder: $0) }
    print(
        "relay: \(mails) mails at 1,000/s, then \(mails * 10) in posts of 100; cores: \(ProcessInfo.processInfo.activeProcessorCount)"
    )
    print("latency ms (p50 p99 max), from when each mail was due to its delivery in another process: \(relay.latency)")
    print("latency ms (p50 p99 max), from when its post began: \(relay.latencyFromPost)")
    print("publish ms (p50 p99 max), the relay's own, from its queue to its commit: \(relay.queueToCommit)")
    print("receive lag ms (p50 p99 max), the relay's own, from the payload made to delivery: \(relay.receiveLag)")
    print(
        "throughput: relayed \(relay.throughput) mails/s, plain inserts \(inserts) rows/s, ratio \(String(format: "%.2f", Double(relay.throughput) / Double(inserts)))x"
    )
}

/// The middle value of `values` (the upper one of an even count).
func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

/// CPU per mail as fast as they go, alone: `compare`'s second run with more mails (its 40,000
/// take a fifth of a second on 2 cores, near the resolution of `getrusage`), and without the
/// paced run. The relay, the poller and the Codable poller take `rounds` turns, one after the
/// other in each, with the cores quiet; the figure is the median of the rounds' ratios.
func compareCPU(mails: Int, rounds: Int) async throws {
    print(
        "cpu: \(mails) mails in posts of 100, as fast as they go; \(rounds) rounds; cores: \(ProcessInfo.processInfo.activeProcessorCount)"
    )
    var ratios: [Double] = []
    var codableRatios: [Double] = []
    for _ in 0..<rounds {
        let relay = try await inFolder("relay") { try await measureRelay(mails: mails / 10, folder: $0, pacing: false) }
        let poller = try await inFolder("poller") {
            try await benchPoller(mails: mails / 10, folder: $0, pacing: false)
        }
        let codable = try await inFolder("codable") {
            try await benchPoller(mails: mails / 10, folder: $0, codable: true, pacing: false)
        }
        ratios.append(relay.cpuPerThousand / max(poller.cpuPerThousand, 1e-9))
        codableRatios.append(relay.cpuPerThousand / max(codable.cpuPerThousand, 1e-9))
        print(
            String(
                format: "  µs of CPU a mail: relay %.2f, poller %.2f, Codable poller %.2f; relay / poller %.2fx",
                relay.cpuPerThousand * 1_000,
                poller.cpuPerThousand * 1_000,
                codable.cpuPerThousand * 1_000,
                ratios.last!
            )
        )
    }
    print(
        String(
            format:
                "  median: relay / poller CPU %.2fx as fast as they go (target <= 1.5); relay / Codable poller %.2fx",
            median(ratios),
            median(codableRatios)
        )
    )
}

/// The relay's codec against Foundation's, in one run: encoding one `BenchMail`, and decoding an
/// envelope-shaped text of 100, per mail, in µs; `rounds` rounds, each timing both.
func compareCodec(rounds: Int) throws {
    struct Envelope: Codable {
        let o: String
        let c: Int
        let m: [BenchMail]
    }
    let mails = (0..<100).map { _ in BenchMail(text: payload()) }
    let text = String(decoding: try JSONEncoder().encode(Envelope(o: "1da73f18", c: 100, m: mails)), as: UTF8.self)
    let repeats = 2_000
    func microseconds(_ body: () throws -> Void) rethrows -> Double {
        let start = monotonicNanoseconds()
        for _ in 0..<repeats { try body() }
        return Double(monotonicNanoseconds() - start) / 1_000 / Double(repeats * 100)
    }
    print("codec: \(rounds) rounds; µs a mail, Foundation's / the relay's (MailEncoder, MailDecoder)")
    let foundationEncoder = JSONEncoder()
    let mailEncoder = MailEncoder()
    var encodeRatios: [Double] = []
    var decodeRatios: [Double] = []
    for _ in 0..<rounds {
        let encoding = try microseconds { for mail in mails { _ = try foundationEncoder.encode(mail) } }
        let encodingHere = try microseconds { for mail in mails { _ = try mailEncoder.encode(mail) } }
        let decoding = try microseconds { _ = try JSONDecoder().decode(Envelope.self, from: Data(text.utf8)) }
        let decodingHere = try microseconds { _ = try MailDecoder().decode(Envelope.self, from: Substring(text)) }
        encodeRatios.append(encoding / encodingHere)
        decodeRatios.append(decoding / decodingHere)
        print(
            String(format: "  encode %.2f / %.2f, decode %.2f / %.2f", encoding, encodingHere, decoding, decodingHere)
        )
    }
    print(
        String(
            format: "  median: the relay's codec %.1fx as fast to encode, %.1fx as fast to decode",
            median(encodeRatios),
            median(decodeRatios)
        )
    )
}

/// The relay against the loop a user writes instead (a 1 ms poller) and plain batched inserts,
/// in one run: with the cores quiet, then with a spinning thread on every core. A second poller
/// whose rows are `BenchMail` in JSON is context: it pays for the encoding the relay pays for.
/// Each takes `rounds` turns, the contenders one after the other in each: a ratio compares two
/// contenders of one round, measured seconds apart, and the median of the rounds' ratios is the
/// figure (a VM's speed drifts between minutes, Benchmarks/README.md).
func compare(mails: Int, rounds: Int) async throws {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    print(
        "compare: \(mails) mails at 1,000/s, then \(mails * 10) in posts of 100; \(rounds) rounds; cores: \(cores)"
    )
    func figures(_ values: [Double], _ format: String) -> String {
        values.map { String(format: format, $0) }.joined(separator: ", ")
    }
    for busy in [false, true] {
        let spinning = busy ? BusyCores(cores) : nil
        var relays: [Measured] = []
        var pollers: [Measured] = []
        var codablePollers: [Measured] = []
        var inserts: [Int] = []
        for _ in 0..<rounds {
            relays.append(try await inFolder("relay") { try await measureRelay(mails: mails, folder: $0) })
            pollers.append(try await inFolder("poller") { try await benchPoller(mails: mails, folder: $0) })
            codablePollers.append(
                try await inFolder("codable") { try await benchPoller(mails: mails, folder: $0, codable: true) }
            )
            inserts.append(try await inFolder("inserts") { try await measureInserts(mails: mails, folder: $0) })
        }
        spinning?.stop()
        print((busy ? "busy (a spinning thread on every core)" : "quiet") + ", each round:")
        print("  latency ms (p50 p99 max) from when each mail was due, then from when its post began:")
        for ((relay, poller), codable) in zip(zip(relays, pollers), codablePollers) {
            print(
                "    due: relay \(relay.latency); poller \(poller.latency); Codable poller \(codable.latency)"
            )
            print(
                "    post: relay \(relay.latencyFromPost); poller \(poller.latencyFromPost); "
                    + "Codable poller \(codable.latencyFromPost)"
            )
            print(
                "    relay's own timers: publish (queue to commit) \(relay.queueToCommit); "
                    + "receive lag (payload made to delivery, whole ms) \(relay.receiveLag)"
            )
        }
        print(
            "  mails/s to the other process: relay \(relays.map(\.throughput)), poller \(pollers.map(\.throughput)), "
                + "Codable poller \(codablePollers.map(\.throughput)); plain inserts \(inserts)"
        )
        let throughput = zip(relays, inserts).map { Double($0.throughput) / Double($1) }
        let p99 = zip(relays, pollers).map { $0.p99 / max($1.p99, 1e-9) }
        let p99FromPost = zip(relays, pollers).map { $0.p99FromPost / max($1.p99FromPost, 1e-9) }
        print(
            "  ratios, each round: relay / inserts \(figures(throughput, "%.2f")); p99 relay / poller from due "
                + "\(figures(p99, "%.2f")), from post \(figures(p99FromPost, "%.2f"))"
        )
        print(
            String(
                format: "  median: relay / inserts %.2fx (target >= 0.8); p99 relay / poller %.2fx from due "
                    + "(target <= 1), %.2fx from post",
                median(throughput),
                median(p99),
                median(p99FromPost)
            )
        )
        // Busy, the spinning threads share the poster's process, so its CPU is not the relay's.
        guard !busy else { continue }
        let paced = zip(relays, pollers).map { $0.cpuPerThousandPaced / max($1.cpuPerThousandPaced, 1e-9) }
        let flatOut = zip(relays, pollers).map { $0.cpuPerThousand / max($1.cpuPerThousand, 1e-9) }
        print(
            "  CPU s per 1,000 mails, both processes, at 1,000/s: relay "
                + figures(relays.map(\.cpuPerThousandPaced), "%.3f") + "; poller "
                + figures(pollers.map(\.cpuPerThousandPaced), "%.3f") + "; as fast as they go: relay "
                + figures(relays.map(\.cpuPerThousand), "%.3f") + "; poller "
                + figures(pollers.map(\.cpuPerThousand), "%.3f")
        )
        print(
            "  ratios, each round: relay / poller CPU at 1,000/s \(figures(paced, "%.2f")); as fast as they go \(figures(flatOut, "%.2f"))"
        )
        print(
            String(
                format: "  median: relay / poller CPU %.2fx at 1,000/s, %.2fx as fast as they go (target <= 1.5)",
                median(paced),
                median(flatOut)
            )
        )
        // Context, not a target: the poller moves a string, where the relay encodes and decodes
        // each mail as JSON; this one does too, as a user carrying typed mail would.
        let codablePaced = zip(relays, codablePollers).map {
            $0.cpuPerThousandPaced / max($1.cpuPerThousandPaced, 1e-9)
        }
        let codableFlatOut = zip(relays, codablePollers).map { $0.cpuPerThousand / max($1.cpuPerThousand, 1e-9) }
        print(
            "  Codable poller CPU at 1,000/s " + figures(codablePollers.map(\.cpuPerThousandPaced), "%.3f")
                + "; as fast as they go " + figures(codablePollers.map(\.cpuPerThousand), "%.3f")
        )
        print(
            String(
                format: "  median: relay / Codable poller CPU %.2fx at 1,000/s, %.2fx as fast as they go",
                median(codablePaced),
                median(codableFlatOut)
            )
        )
    }
}

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "read" {
    try await read(path: arguments[2], count: Int(arguments[3])!, after: Int64(arguments[4])!)
    exit(0)
}
if arguments.count == 4, arguments[1] == "relay-read" {
    try await readRelayed(path: arguments[2], count: Int(arguments[3])!)
    exit(0)
}
if arguments.count >= 4, arguments[1] == "poll-read" {
    try await pollRead(path: arguments[2], count: Int(arguments[3])!, codable: arguments.count > 4)
    exit(0)
}
if arguments.count >= 2, arguments[1] == "codec" {
    try compareCodec(rounds: arguments.count > 2 ? max(Int(arguments[2]) ?? 5, 1) : 5)
    exit(0)
}
if arguments.count >= 2, arguments[1] == "cpu" {
    try await compareCPU(
        mails: arguments.count > 2 ? Int(arguments[2]) ?? 200_000 : 200_000,
        rounds: arguments.count > 3 ? max(Int(arguments[3]) ?? 5, 1) : 5
    )
    exit(0)
}
if arguments.count >= 2, arguments[1] == "compare" {
    try await compare(
        mails: arguments.count > 2 ? Int(arguments[2]) ?? 5_000 : 5_000,
        rounds: arguments.count > 3 ? max(Int(arguments[3]) ?? 3, 1) : 3
    )
    exit(0)
}
if arguments.count >= 2, arguments[1] == "relay" {
    try await benchRelay(mails: arguments.count > 2 ? Int(arguments[2]) ?? 5_000 : 5_000)
    exit(0)
}

let rows = arguments.count > 1 ? Int(arguments[1]) ?? 5_000 : 5_000
let folder = NSTemporaryDirectory() + "sqlitebench-\(getpid())"
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }
let path = folder + "/relay.sqlite"
let writer = try await RelayDatabase.open(path: path)
let wakeUps = try await WakeUps.open(beside: path, name: "writer")
let checkpoints = checkpointing(writer)
let clock = ContinuousClock()

// Latency: one row a commit, 1,000 a second, the reader in another process.
var (reader, output) = try startReader(path: path, count: rows, after: try await writer.newest())
let start = clock.now
for index in 0..<rows {
    _ = try await writer.append([payload()], at: 0)
    wakeUps.nudge()
    try await clock.sleep(until: start + .milliseconds(index + 1))
}
// Stamped as appended: the first three figures (from when due) are the ones.
let latency = (readLine(from: output) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
reader.waitUntilExit()

// Throughput: batches of 100 as fast as they go, until the reader has read them all.
let batch = Array(repeating: String(repeating: "x", count: payloadBytes), count: 100)
let throughputRows = rows * 10
var cursor = try await writer.newest()
(reader, output) = try startReader(path: path, count: throughputRows, after: cursor)
let relayed = try await clock.measure {
    for _ in 0..<(throughputRows / 100) {
        _ = try await writer.append(batch.map { _ in payload() }, at: 0)
        wakeUps.nudge()
    }
    _ = readLine(from: output)
    reader.waitUntilExit()
}
// Baseline: the same batched inserts, nobody reading, in the same run.
let inserted = try await clock.measure {
    for _ in 0..<(throughputRows / 100) { _ = try await writer.append(batch.map { _ in payload() }, at: 0) }
}
let ratio = inserted / relayed
print(
    "rows: \(rows) at 1,000/s, then \(throughputRows) in batches of 100; cores: \(ProcessInfo.processInfo.activeProcessorCount)"
)
print("latency ms (p50 p99 max), append to read in another process: \(latency)")
print(
    "throughput: relayed \(Int(Double(throughputRows) / (Double(relayed.components.attoseconds) / 1e18 + Double(relayed.components.seconds)))) rows/s, plain inserts \(Int(Double(throughputRows) / (Double(inserted.components.attoseconds) / 1e18 + Double(inserted.components.seconds)))) rows/s, ratio \(String(format: "%.2f", ratio))x"
)
checkpoints.cancel()
await wakeUps.close()
await writer.close()
