// The loop a user writes instead of the relay: a plain table, INSERTs on one side, and on the
// other a reader that asks for new rows every millisecond. `SQLiteBench compare` runs it beside
// the relay and plain batched inserts, in one run (Benchmarks/README.md has the figures).
import Foundation
import Logging
import SQLiteNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU seconds this process has used, user and system.
func cpuSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)  // Glibc imports the constant as an enum case
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Opens `path` as the poller's table, in WAL mode with the relay's synchronous setting.
func openPlain(_ path: String) async throws -> SQLiteConnection {
    let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
    _ = try await connection.query("PRAGMA journal_mode = WAL")
    _ = try await connection.query("PRAGMA synchronous = NORMAL")
    _ = try await connection.query("PRAGMA busy_timeout = 5000")
    _ = try await connection.query(
        "CREATE TABLE IF NOT EXISTS plain (id INTEGER PRIMARY KEY AUTOINCREMENT, payload TEXT NOT NULL)"
    )
    return connection
}

/// Inserts `payloads` in one transaction, as a user's writer does.
func insertPlain(_ connection: SQLiteConnection, _ payloads: [String]) async throws {
    let values = Array(repeating: "(?)", count: payloads.count).joined(separator: ",")
    _ = try await connection.query("INSERT INTO plain (payload) VALUES \(values)", payloads.map { .text($0) })
}

/// The poller: every millisecond, reads the rows after the last one it read, until it has
/// `count`; then prints its latencies' percentiles and the CPU seconds it used since it was ready.
/// With `codable`, each row is a `BenchMail` in JSON, decoded as a user who carries typed mail
/// decodes it.
func pollRead(path: String, count: Int, codable: Bool) async throws {
    let decoder = JSONDecoder()
    let connection = try await openPlain(path)
    var cursor =
        try await connection.query("SELECT coalesce(max(id), 0) AS id FROM plain").first?
        .column("id")?.integer ?? 0
    let cpuAtStart = cpuSeconds()
    say("ready")
    var latencies = Latencies()
    while latencies.count < count {
        let rows = try await connection.query(
            "SELECT id, payload FROM plain WHERE id > ? ORDER BY id LIMIT 1000",
            [.integer(cursor)]
        )
        let now = monotonicNanoseconds()
        for row in rows {
            cursor = row.column("id")?.integer ?? cursor
            var text = row.column("payload")?.string
            if codable, let json = text { text = try decoder.decode(BenchMail.self, from: Data(json.utf8)).text }
            if let text { latencies.add(text, at: now) }
        }
        if rows.count < 1000 { try await Task.sleep(for: .milliseconds(1)) }
    }
    say(latencies.summary() + String(format: " %.3f", cpuSeconds() - cpuAtStart))
    try await connection.close().get()
}

/// Runs this program as the poller of `count` rows; returns it once it is ready.
func startPoller(path: String, count: Int, codable: Bool) throws -> (Process, FileHandle) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["poll-read", path, String(count)] + (codable ? ["codable"] : [])
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    _ = readLine(from: output.fileHandleForReading)  // "ready"
    return (process, output.fileHandleForReading)
}

/// What one contender measured: latency at 1,000 mails/s (p50, p99, max, ms) from when each mail
/// was due and from when its post began, throughput to the other process (mails/s), and CPU
/// seconds of both processes per 1,000 mails, at 1,000 mails/s and in the throughput run.
struct Measured {
    var latency = "?"
    /// p99 of ``latency``, ms.
    var p99 = 0.0
    var latencyFromPost = "?"
    /// p99 of ``latencyFromPost``, ms.
    var p99FromPost = 0.0
    /// The relay's publish durations at 1,000 mails/s, from its queue to its commit (p50, p99,
    /// max, ms): its own metric (KeptTimer.swift); "-" for the others.
    var queueToCommit = "-"
    /// The relay's receive lags at 1,000 mails/s, from the publisher making a row's payload to
    /// the delivery (p50, p99, max, whole ms): its own metric; "-" for the others.
    var receiveLag = "-"
    var throughput = 0
    var cpuPerThousandPaced = 0.0
    var cpuPerThousand = 0.0

    /// The latencies in the reader's last line (``Latencies/summary()``, the relay's receive lags
    /// if it is the relay's reader, then its CPU seconds: ``cpu(_:)``).
    init(reader line: String?) {
        let fields = (line ?? "?").split(separator: " ")
        guard fields.count == 7 || fields.count == 10 else { return }
        if fields.count == 10 { receiveLag = fields[6..<9].joined(separator: " ") }
        latency = fields[0..<3].joined(separator: " ")
        p99 = Double(fields[1]) ?? 0
        latencyFromPost = fields[3..<6].joined(separator: " ")
        p99FromPost = Double(fields[4]) ?? 0
    }

    init() {}

    /// The CPU seconds at the end of the reader's line.
    static func cpu(_ line: String?) -> Double {
        Double((line ?? "").split(separator: " ").last ?? "") ?? 0
    }
}

/// The poller: a plain table, one row a commit, read by a loop polling every millisecond. With
/// `codable`, each row is a `BenchMail` encoded as JSON, as the relay carries it. Without
/// `pacing`, only the run as fast as they go.
func benchPoller(mails: Int, folder: String, codable: Bool = false, pacing: Bool = true) async throws -> Measured {
    let path = folder + "/poll.sqlite"
    let writer = try await openPlain(path)
    let encoder = JSONEncoder()
    func row(due: UInt64? = nil) throws -> String {
        let payload = payload(stamp: due)
        return codable ? String(decoding: try encoder.encode(BenchMail(text: payload)), as: UTF8.self) : payload
    }
    let measured = try await measure(
        mails: mails,
        pacing: pacing,
        reader: { try startPoller(path: path, count: $0, codable: codable) },
        postOne: { try await insertPlain(writer, [try row(due: $0)]) },
        postHundred: { try await insertPlain(writer, try (0..<100).map { _ in try row() }) },
        flush: {}
    )
    try await writer.close().get()
    return measured
}

/// Keeps `count` cores busy with a spinning thread each, until ``stop()``: the busy runs.
final class BusyCores: Sendable {
    private let stopped = Atomic<Bool>(false)

    init(_ count: Int) {
        for _ in 0..<count {
            Thread { [self] in
                var spins = 0
                while !stopped.load(ordering: .relaxed) { spins &+= 1 }
            }.start()
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}
