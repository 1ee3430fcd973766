import AsyncMail
import AsyncMailTesting
import Foundation
import NIOCore
import NIOPosix
import SQLiteNIO
import Testing

@testable import AsyncMailSQLite

/// A seeded generator: a failing seed fails again. The suite's other seeded tests use it too.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Everything any program of the file's owner can put in the file and on the sockets, generated:
/// the relay's decoders of rows, numbers, presence rows, changed topics and datagrams. (The wire
/// payload itself is fuzzed with libFuzzer: `Scripts/fuzz-relay.sh`.)
@Suite("SQLiteRelay: fuzzed rows, presence rows and datagrams")
struct FuzzedInputTests {
    @Test(
        "random rows, counters, presence rows and datagrams: rejected and counted, never a crash or a hang; mail still flows",
        arguments: Array(1...8) as [UInt64]
    )
    func fuzzed(seed: UInt64) async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            var random = SplitMix(state: seed)
            let reader = try SQLiteRelay(
                mailroom: Mailroom(),
                path: path,
                configuration: .init(
                    checkInterval: .milliseconds(100),
                    busyTimeout: .seconds(5),
                    retryBackoff: .milliseconds(10) ... .milliseconds(200),
                    presence: .init(expiry: .seconds(5)),
                    heartbeatInterval: .milliseconds(100)
                ),
                logger: logger
            )
            try reader.register(Line.self, as: "line", positions: .hostWide)
            try reader.register(sender: Room.self, as: "room")
            let writer = try makeRelay(Mailroom(), at: path, hostWide: true)
            let readerTask = try await running(reader)
            defer { readerTask.cancel() }
            let writerTask = try await running(writer)
            defer { writerTask.cancel() }
            let heard = await reader.mailroom.subscribe(to: Line.self)
            for number in 0..<5 { await writer.mailroom.post(Line(text: "real \(number)"), from: Room(name: "a")) }
            #expect(try await heard.first(5).count == 5)

            let connection = try await #require(reader.databaseForTesting).openConnectionForTesting(logger: logger)
            let real = try await connection.query("SELECT payload, stream FROM asyncmail_relay")
            let payloads = real.compactMap { $0.column("payload")?.string }
            let streams = real.compactMap { $0.column("stream")?.string }
            let now = Int(SQLiteRelay.milliseconds())
            for _ in 0..<10 {
                try await connection.writing {
                    for _ in 0..<30 {
                        _ = try await connection.query(
                            """
                            INSERT INTO asyncmail_relay (at, payload, first, mails, stream, stream_epoch, stream_first)
                            VALUES (?, ?, ?, ?, ?, ?, ?)
                            """,
                            [
                                .integer(now), Self.payload(from: payloads, &random), Self.number(&random),
                                Self.number(&random), Self.text(from: streams, &random), Self.number(&random),
                                Self.number(&random),
                            ]
                        )
                    }
                    // The counters the writers number from, too.
                    _ = try await connection.query(
                        """
                        INSERT OR REPLACE INTO asyncmail_relay_counters (stream, last, epoch, touched)
                        VALUES (?, ?, ?, ?)
                        """,
                        [
                            Self.text(from: streams + ["", "@x"], &random), Self.number(&random), Self.number(&random),
                            .integer(now),
                        ].map(Self.present)
                    )
                    for _ in 0..<5 {
                        _ = try await connection.query(
                            """
                            INSERT OR REPLACE INTO asyncmail_relay_presence (instance, topic, key, meta, signature)
                            VALUES (?, ?, ?, ?, ?)
                            """,
                            [
                                Self.text(from: ["x", ""], &random), Self.text(from: ["lobby"], &random),
                                Self.text(from: ["k"], &random), Self.text(from: ["{}", #"{"a":"b"}"#], &random),
                                Self.text(from: [""], &random),
                            ].map(Self.present)
                        )
                        _ = try await connection.query(
                            "INSERT INTO asyncmail_relay_presence_changes (topic) VALUES (?)",
                            [Self.present(Self.text(from: ["lobby"], &random))]
                        )
                    }
                    _ = try await connection.query(
                        "INSERT OR REPLACE INTO asyncmail_relay_presence_instances (instance, beat) VALUES (?, ?)",
                        [Self.text(from: ["x"], &random), Self.number(&random)].map(Self.present)
                    )
                }
            }
            try await connection.close().get()
            // Datagrams of every size up to 40 bytes, from a bound socket.
            let sender = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(unixDomainSocketPath: path + ".wake/fuzz.other", cleanupExistingSocketFile: true)
                .get()
            for _ in 0..<100 {
                let size = Int.random(in: 0...40, using: &random)
                var buffer = sender.allocator.buffer(capacity: size)
                buffer.writeBytes((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
                try await sender.writeAndFlush(
                    AddressedEnvelope(
                        remoteAddress: try SocketAddress(unixDomainSocketPath: reader.socketPathForTesting),
                        data: buffer
                    )
                )
            }
            try await sender.close()

            // Still relaying, after all of it.
            await writer.mailroom.post(Line(text: "after the fuzz"), from: Room(name: "a"))
            try await withTimeout {
                for await line in heard where line.text == "after the fuzz" { return }
            }
            #expect(reader.counters.rejected > 0)
            // Only what passes every check is listed: an instance of 1 to 64 bytes, a key of 1 to 256.
            for entry in reader.presence(in: "lobby") {
                #expect((1...64).contains(entry.instance.utf8.count) && (1...256).contains(entry.key.utf8.count))
            }
        }
    }

    /// A payload as another program might write one: a real one mutated, random text, or a value
    /// of another type.
    private static func payload(from real: [String], _ random: inout SplitMix) -> SQLiteData {
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1:
            var bytes = Array((real.randomElement(using: &random) ?? "{}").utf8)
            for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 32...126, using: &random)
            }
            if Bool.random(using: &random) {
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
            }
            return .text(String(decoding: bytes, as: UTF8.self))
        case 2:
            return .text(real.randomElement(using: &random) ?? "")  // a real one again: a duplicate
        case 3:
            return .blob(
                ByteBuffer(
                    bytes: (0..<Int.random(in: 0...64, using: &random)).map { _ in
                        UInt8.random(in: 0...255, using: &random)
                    }
                )
            )
        case 4:
            return .integer(Int.random(in: Int.min...Int.max, using: &random))
        default:
            return .text(
                String(
                    (0..<Int.random(in: 0...100, using: &random)).map { _ in
                        Character(UnicodeScalar(UInt8.random(in: 0...127, using: &random)))
                    }
                )
            )
        }
    }

    /// `value`, or an empty text for null: a column that is NOT NULL takes any other type.
    private static func present(_ value: SQLiteData) -> SQLiteData {
        if case .null = value { .text("") } else { value }
    }

    /// A number column: null, an edge, or anything.
    private static func number(_ random: inout SplitMix) -> SQLiteData {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: .null
        case 1: .integer([0, -1, 1, Int.max, Int.min].randomElement(using: &random)!)
        case 2: .integer(Int.random(in: 0...100, using: &random))
        case 3: .float(Double.random(in: -1e20...1e20, using: &random))
        case 4: .text("12")
        default: .integer(Int.random(in: Int.min...Int.max, using: &random))
        }
    }

    /// A text column: one of `real`, random text, over-long text, a blob, a number or null.
    private static func text(from real: [String], _ random: inout SplitMix) -> SQLiteData {
        switch Int.random(in: 0..<7, using: &random) {
        case 0, 1, 2: .text(real.randomElement(using: &random) ?? "")
        case 3: .text(String(repeating: "x", count: Int.random(in: 0...5_000, using: &random)))
        case 4: .blob(ByteBuffer(bytes: [0, 255]))
        case 5: .integer(7)
        default: .null
        }
    }
}
