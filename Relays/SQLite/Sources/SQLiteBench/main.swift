// The floor the embedded relay stands on, between two processes on one host: a writer appends
// 100-byte rows and nudges, a second process (this program, run again as `read`) reads them
// through the row feed. Measured in one run:
//   - latency, from the writer's append to the reader's read, at 1,000 rows/s, one row a commit;
//   - throughput, the writer appending as fast as it can in batches, until the reader has read
//     everything, against the baseline of the same batched inserts with nobody reading.
//
//   swift run -c release --package-path Relays/SQLite SQLiteBench [ROWS]     default 5,000
import AsyncMailSQLite
import Foundation
import Logging

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

/// A row's payload: when it was appended, padded to `payloadBytes`.
func payload() -> String {
    let stamp = String(monotonicNanoseconds())
    return stamp + "|" + String(repeating: "x", count: max(payloadBytes - stamp.count - 1, 0))
}

/// A line on standard output, at once: the parent waits for it on a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(Int(Double(sorted.count) * fraction), sorted.count - 1)]
}

/// The reader: reads `count` rows after `cursor`, then prints their latencies' percentiles.
func read(path: String, count: Int, after cursor: Int64) async throws {
    let database = try await RelayDatabase.open(path: path, logger: logger)
    let wakeUps = try await WakeUps.open(beside: path, name: "reader")
    let feed = RowFeed(
        database: database,
        wakeUps: wakeUps,
        batch: 1_000,
        maximumBytes: 4_096,
        safetyNet: .milliseconds(500)
    )
    say("ready")
    var latencies: [Double] = []
    for try await batch in feed.rows(after: cursor) {
        let now = monotonicNanoseconds()
        for row in batch {
            guard let stamp = row.payload?.split(separator: "|").first.flatMap({ UInt64($0) }) else { continue }
            latencies.append(Double(now &- stamp) / 1_000_000)
        }
        if latencies.count >= count { break }
    }
    latencies.sort()
    say(String(format: "%.3f %.3f %.3f", percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.last ?? 0))
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

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "read" {
    try await read(path: arguments[2], count: Int(arguments[3])!, after: Int64(arguments[4])!)
    exit(0)
}

let rows = arguments.count > 1 ? Int(arguments[1]) ?? 5_000 : 5_000
let folder = NSTemporaryDirectory() + "sqlitebench-\(getpid())"
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }
let path = folder + "/relay.sqlite"
let writer = try await RelayDatabase.open(path: path, logger: logger)
let wakeUps = try await WakeUps.open(beside: path, name: "writer")
let clock = ContinuousClock()

// Latency: one row a commit, 1,000 a second, the reader in another process.
var (reader, output) = try startReader(path: path, count: rows, after: try await writer.newest())
let start = clock.now
for index in 0..<rows {
    _ = try await writer.append([payload()], at: 0)
    wakeUps.nudge()
    try await clock.sleep(until: start + .milliseconds(index + 1))
}
let latency = readLine(from: output) ?? "?"
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
await wakeUps.close()
await writer.close()
