import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import AsyncMailTesting
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire
import Testing

@testable import AsyncMailPostgres

/// The inbound path without a database: everything a hostile `NOTIFY` or row can hold is
/// dropped, reported and counted, and nothing traps, hangs or grows.
@Suite("Untrusted payloads, without a database")
struct InboundTests {
    /// A relay that is never run: only its inbound path is used, with a mailroom to deliver to.
    func relay(_ mode: PostgresRelay.Mode = .ephemeral, key: RelayKey? = nil) throws -> (PostgresRelay, Mailroom) {
        let mailroom = Mailroom()
        let relay = try makeRelay(mailroom, on: RelayChannel("inbound_tests"), mode: mode) {
            $0.authenticationKey = key
        }
        return (relay, mailroom)
    }

    /// Receives `payload` as a notification; a spill notice reads `rows[id]`.
    func receive(_ payload: String, by relay: PostgresRelay, rows: [Int64: String] = [:]) async throws {
        try await relay.perform(relay.receiver.receive(payload)) { notice in rows[notice.row] }
    }

    static let hostile: [(String, String)] = [
        (
            "the issue's row: n = Int.max",
            #"{"o":"x","n":9223372036854775807,"t":"chat.line","st":"room","s":{"name":"lobby"},"c":2,"m":[{"text":"a"},{"text":"b"}]}"#
        ),
        (
            "n + c past the largest number",
            #"{"o":"x","n":9007199254740991,"t":"chat.line","c":2,"m":[{"text":"a"},{"text":"b"}]}"#
        ),
        ("n = Int.min", #"{"o":"x","n":-9223372036854775808,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        ("n = 0", #"{"o":"x","n":0,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        ("n past Int", #"{"o":"x","n":92233720368547758070,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        ("a negative count", #"{"o":"x","n":1,"t":"chat.line","c":-5,"m":[]}"#),
        ("a zero count", #"{"o":"x","n":1,"t":"chat.line","c":0,"m":[]}"#),
        ("an enormous count", #"{"o":"x","n":1,"t":"chat.line","c":9223372036854775807,"m":[{"text":"a"}]}"#),
        ("a count that disagrees", #"{"o":"x","n":1,"t":"chat.line","c":3,"m":[{"text":"a"}]}"#),
        ("a count that disagrees, unknown type", #"{"o":"x","n":1,"t":"nope","c":3,"m":[1]}"#),
        ("heartbeat Int.max", #"{"o":"x","h":9223372036854775807}"#),
        ("heartbeat negative", #"{"o":"x","h":-1}"#),
        ("spill notice, row 0", #"{"o":"x","n":1,"c":1,"r":0}"#),
        ("spill notice, count Int.max", #"{"o":"x","n":1,"c":9223372036854775807,"r":5}"#),
        ("wrong types", #"{"o":"x","n":"1","t":"chat.line","c":true,"m":{}}"#),
        ("origin is a number", #"{"o":7,"n":1,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        ("origin with quotes", #"{"o":"x\"y","n":1,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        (
            "origin too long",
            #"{"o":""# + String(repeating: "a", count: 65) + #"","n":1,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        ("deep nesting", String(repeating: "[", count: 100_000)),
        (
            "deep nesting inside mails",
            #"{"o":"x","n":1,"t":"chat.line","c":1,"m":["# + String(repeating: "[", count: 100_000)
        ),
        (
            "a trace context with nine entries",
            #"{"o":"x","n":1,"x":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        (
            "a trace key with a space",
            #"{"o":"x","n":1,"x":{"trace parent":"1"},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        ("an empty trace key", #"{"o":"x","n":1,"x":{"":"1"},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        (
            "a trace value with a control character",
            #"{"o":"x","n":1,"x":{"traceparent":"00-\n"},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        (
            "a trace value over 512 bytes",
            #"{"o":"x","n":1,"x":{"tracestate":""# + String(repeating: "a", count: 513)
                + #""},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        (
            "a trace context that is not an object",
            #"{"o":"x","n":1,"x":"00-ab","t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        ("a trace value that is a number", #"{"o":"x","n":1,"x":{"a":1},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        ("a negative sending time", #"{"o":"x","n":1,"at":-1,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#),
        (
            "a sending time past 2^53",
            #"{"o":"x","n":1,"at":9007199254740992,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        ),
        ("not JSON", "DROP TABLE asyncmail_relay"),
        ("empty", ""),
        ("a lone brace", "{"),
    ]

    @Test("crafted payloads are rejected, reported and counted; the relay then carries on", arguments: hostile)
    func crafted(_ name: String, _ payload: String) async throws {
        let (relay, mailroom) = try relay()
        let events = relay.events()
        let lines = await mailroom.subscribe(to: ChatLine.self)
        try await receive(payload, by: relay)
        #expect(relay.counters.rejected == 1, "\(name)")
        #expect(relay.counters.received == 0)
        #expect(relay.counters.missing == 0)
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.code == .rejected, "\(name): no rejection reported")
        #expect(event?.reason?.isEmpty == false)
        // The same origin's real mail still flows.
        try await receive(#"{"o":"x","n":1,"t":"chat.line","c":1,"m":[{"text":"after"}]}"#, by: relay)
        #expect(try await first(1, of: lines).map(\.text) == ["after"])
    }

    @Test("a valid trace context and sending time reach the delivery; a post without them still flows")
    func traceContextIsDecoded() throws {
        let (relay, _) = try relay()
        let traced =
            #"{"o":"x","n":1,"at":1700000000000,"x":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v,a=b"},"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        guard case .post(_, _, _, .decoded(let post, _)) = relay.registry.decode(traced, signer: nil) else {
            Issue.record("the traced post was not decoded")
            return
        }
        #expect(post.trace["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(post.trace["tracestate"] == "k=v,a=b")
        #expect(post.sentAt == 1_700_000_000_000)
        let plain = #"{"o":"x","n":1,"t":"chat.line","c":1,"m":[{"text":"a"}]}"#
        guard case .post(_, _, _, .decoded(let untraced, _)) = relay.registry.decode(plain, signer: nil) else {
            Issue.record("the plain post was not decoded")
            return
        }
        #expect(untraced.trace.isEmpty)
        #expect(untraced.sentAt == nil)
    }

    @Test("an outbound trace context is written so that a receiver accepts it, or left out")
    func traceContextIsWritten() {
        let carrier = [
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=\"b\"",
        ]
        let text = OutboundPost.traceText(carrier)
        #expect(
            text == #"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"a=\"b\""}"#
        )
        #expect(OutboundPost.traceText([:]) == nil)
        #expect(OutboundPost.traceText(["bad key": "v"]) == nil)
        #expect(OutboundPost.traceText(["k": String(repeating: "v", count: 513)]) == nil)
    }

    @Test("huge strings are carried or dropped by size, never trapping")
    func hugeStrings() async throws {
        let (relay, mailroom) = try relay()
        let lines = await mailroom.subscribe(to: ChatLine.self)
        let text = String(repeating: "é", count: 1 << 20)
        try await receive(#"{"o":"x","n":1,"t":"chat.line","c":1,"m":[{"text":""# + text + #""}]}"#, by: relay)
        #expect(try await first(1, of: lines).map(\.text.count) == [1 << 20])
        try await receive(#"{"o":""# + text + #"","n":1,"t":"chat.line","c":1,"m":[]}"#, by: relay)
        #expect(relay.counters.rejected == 1)
    }

    @Test("a heartbeat claiming the largest number for a real origin never makes its mail look repeated")
    func forgedHeartbeat() async throws {
        let (relay, mailroom) = try relay()
        let lines = await mailroom.subscribe(to: ChatLine.self)
        try await receive(#"{"o":"real","n":1,"t":"chat.line","c":1,"m":[{"text":"one"}]}"#, by: relay)
        try await receive(#"{"o":"real","h":9223372036854775807}"#, by: relay)  // out of range: rejected
        try await receive(#"{"o":"real","h":9007199254740991}"#, by: relay)  // in range: a claim only
        try await receive(#"{"o":"real","n":2,"t":"chat.line","c":1,"m":[{"text":"two"}]}"#, by: relay)
        #expect(try await first(2, of: lines).map(\.text) == ["one", "two"])
        #expect(relay.counters.rejected == 1)
        #expect(relay.counters.duplicates == 0)
    }

    @Test("one origin's hostile payloads leave another origin's accounting alone")
    func otherOrigins() async throws {
        let (relay, mailroom) = try relay()
        let lines = await mailroom.subscribe(to: ChatLine.self)
        try await receive(#"{"o":"good","n":1,"t":"chat.line","c":1,"m":[{"text":"1"}]}"#, by: relay)
        for (_, payload) in Self.hostile {
            try await receive(payload.replacingOccurrences(of: #""o":"x""#, with: #""o":"evil""#), by: relay)
        }
        try await receive(#"{"o":"evil","n":5,"t":"chat.line","c":1,"m":[{"text":"e"}]}"#, by: relay)
        try await receive(#"{"o":"evil","h":9007199254740991}"#, by: relay)
        try await receive(#"{"o":"good","n":2,"t":"chat.line","c":1,"m":[{"text":"2"}]}"#, by: relay)
        #expect(try await first(3, of: lines).map(\.text) == ["1", "e", "2"])
        let gaps = relay.counters.missing
        #expect(gaps == 9_007_199_254_740_986, "only evil's own claim: 6 … 2^53 − 1")
        #expect(relay.counters.duplicates == 0)
    }

    @Test("a spill notice naming any row delivers only a verified row holding the post it names")
    func spillNoticeNamingAnyRow() async throws {
        let (relay, mailroom) = try relay()
        let lines = await mailroom.subscribe(to: ChatLine.self)
        let rows: [Int64: String] = [
            1: #"{"o":"other","n":1,"t":"chat.line","c":1,"m":[{"text":"someone else's"}]}"#,
            2: #"{"o":"x","n":7,"t":"chat.line","c":2,"m":[{"text":"wrong number"},{"text":"!"}]}"#,
            3: #"{"o":"x","h":3}"#,
            4: "garbage",
            5: #"{"o":"x","n":1,"t":"chat.line","c":2,"m":[{"text":"a"},{"text":"b"}]}"#,
        ]
        for row in 1...4 { try await receive(#"{"o":"x","n":1,"c":2,"r":\#(row)}"#, by: relay, rows: rows) }
        #expect(relay.counters.rejected == 4)
        try await receive(#"{"o":"x","n":1,"c":2,"r":99}"#, by: relay, rows: rows)  // gone: counted by numbers later
        try await receive(#"{"o":"x","n":1,"c":2,"r":5}"#, by: relay, rows: rows)
        try await receive(#"{"o":"x","n":1,"c":2,"r":5}"#, by: relay, rows: rows)  // replayed: a duplicate
        #expect(try await first(2, of: lines).map(\.text) == ["a", "b"])
        #expect(relay.counters.duplicates == 2)
        #expect(relay.counters.rejected == 4)
    }

    @Test("durable: a row holding a spill notice is rejected; no other row is read for it")
    func durableSpillNotice() async throws {
        let (relay, _) = try relay(.durable())
        try await relay.perform(relay.receiver.receive(#"{"o":"x","n":1,"c":2,"r":5}"#)) { _ in
            Issue.record("a durable relay read a row for a spill notice")
            return nil
        }
        #expect(relay.counters.rejected == 1)
    }

    @Test("with a key, only payloads signed with it are delivered")
    func signedPayloads() async throws {
        let key = try RelayKey(Array(repeating: 7, count: 32))
        let (relay, mailroom) = try relay(key: key)
        let lines = await mailroom.subscribe(to: ChatLine.self)
        let json = #"{"o":"x","n":1,"t":"chat.line","c":1,"m":[{"text":"signed"}]}"#
        let forged = #"{"o":"x","n":1,"t":"chat.line","c":1,"m":[{"text":"forged"}]}"#
        let otherKey = try RelayKey(Array(repeating: 8, count: 32))
        try await receive(forged, by: relay)
        try await receive(otherKey.signer.sign(forged), by: relay)
        try await receive(key.signer.sign(json).replacingOccurrences(of: "signed", with: "forged"), by: relay)
        #expect(relay.counters.rejected == 3)
        try await receive(key.signer.sign(json), by: relay)
        #expect(try await first(1, of: lines).map(\.text) == ["signed"])
        #expect(throws: RelayConfigurationError.keyTooShort(bytes: 16)) { try RelayKey(Array(repeating: 1, count: 16)) }
    }

    @Test("a flood of rejected payloads is counted and reported in full, but logged once a second")
    func floodIsNotLoggedLineByLine() async throws {
        let lines = Locked<[String]>([])
        let mailroom = Mailroom()
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: Database.configuration,
            configuration: .init(channel: RelayChannel("inbound_tests"), mode: .ephemeral),
            logger: Logger(label: "flood") { _ in CapturingLogHandler(lines: lines) }
        )
        let events = relay.events()
        for _ in 0..<1_000 { try await receive("not an envelope", by: relay) }
        #expect(relay.counters.rejected == 1_000)
        try await awaitEvents(1_000, from: events) { $0.code == .rejected }
        #expect(lines.withLock { $0.filter { $0.contains("rejected") }.count } == 1)
    }

    @Test("seeded random payloads: no trap, every answer within its bounds, the ledger bounded")
    func randomPayloads() async throws {
        var random = SeededRandomNumberGenerator(seed: 2026)
        let seeds =
            Self.hostile.map(\.1) + [
                #"{"o":"a","n":1,"t":"chat.line","st":"room","s":{"name":"lobby"},"c":2,"m":[{"text":"a"},{"text":"b"}]}"#,
                #"{"o":"a","h":4}"#,
                #"{"o":"b","n":3,"c":1,"r":12}"#,
                #"{"o":"b","n":3,"t":"zzz","c":1,"m":[null]}"#,
            ]
        let receiver = InboundReceiver(registry: registry(), signer: nil, ownOrigin: "self", forgetAfter: 3)
        let alphabet = Array(#"{}[]":,0123456789-+.eE"ontcmhrs\ "#.utf8) + [0xC3, 0xA9, 0xFF]
        for round in 0..<20_000 {
            // Long and synchronous: let the tests beside it run (Tests/README.md, rule 7).
            if round % 200 == 199 { await Task.yield() }
            var bytes = Array(seeds[Int(random.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<Int(random.next() % 6) {
                let at = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0 where !bytes.isEmpty: bytes.remove(at: at)
                case 1: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                case 2 where !bytes.isEmpty: bytes[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                default: bytes.insert(contentsOf: Array("9223372036854775807".utf8), at: at)
                }
            }
            let payload = String(decoding: bytes, as: UTF8.self)
            var action = receiver.receive(payload)
            #expect(action.brokenPromise == nil, "round \(round): \(payload)")
            if case .readSpilled(let notice) = action {
                action = receiver.receiveSpilled(payload, for: notice)
                #expect(action.brokenPromise == nil, "round \(round): \(payload)")
            }
            if round % 100 == 0 { receiver.tick() }
        }
        #expect(receiver.rememberedOrigins <= 10_000)
    }

    /// The registrations of ``makeRelay``, for a receiver without a relay.
    func registry() -> WireRegistry {
        let registry = WireRegistry()
        try! registry.register(ChatLine.self, as: "chat.line")
        try! registry.register(sender: RoomID.self, as: "room")
        return registry
    }
}

@Suite("The per-origin ledger")
struct OriginLedgerTests {
    @Test("gaps, repeats and overlaps are told apart; a claim never marks mail delivered")
    func verdicts() {
        var ledger = OriginLedger(horizon: 10)
        #expect(ledger.post(from: "a", first: 5, last: 6) == .deliver(missing: 0))  // first contact
        #expect(ledger.post(from: "a", first: 7, last: 7) == .deliver(missing: 0))
        #expect(ledger.post(from: "a", first: 10, last: 10) == .deliver(missing: 2))
        #expect(ledger.post(from: "a", first: 7, last: 7) == .duplicate)
        #expect(ledger.post(from: "a", first: 9, last: 11) == .overlapping(delivered: 10))
        #expect(ledger.heartbeat(from: "a", last: 15) == 5)
        #expect(ledger.heartbeat(from: "a", last: 15) == 0)
        #expect(ledger.post(from: "a", first: 12, last: 12) == .deliver(missing: 0), "claimed missing, yet delivered")
        #expect(ledger.heartbeat(from: "b", last: 100) == 0)
        #expect(
            ledger.post(from: "b", first: 1, last: 1) == .deliver(missing: 0),
            "a first-contact claim marks nothing delivered"
        )
    }

    @Test("an origin unheard for the horizon is forgotten; one heard within it is kept")
    func forgetting() {
        var ledger = OriginLedger(horizon: 3)
        _ = ledger.post(from: "quiet", first: 1, last: 1)
        _ = ledger.post(from: "busy", first: 1, last: 1)
        for tick in 2...4 {
            ledger.advance()
            _ = ledger.post(from: "busy", first: tick, last: tick)
        }
        #expect(ledger.count == 1)
        #expect(ledger.post(from: "busy", first: 6, last: 6) == .deliver(missing: 1))
        #expect(ledger.post(from: "quiet", first: 9, last: 9) == .deliver(missing: 0), "forgotten: first contact again")
    }

    @Test("a flood of origins keeps the ledger within its capacity, and the recently heard")
    func capacity() async {
        var ledger = OriginLedger(horizon: 1_000, capacity: 100)
        _ = ledger.post(from: "live", first: 1, last: 1)
        for origin in 0..<10_000 {
            if origin % 500 == 499 { await Task.yield() }  // long and synchronous, as above
            if origin % 10 == 0 {
                ledger.advance()
                _ = ledger.heartbeat(from: "live", last: 1)
            }
            _ = ledger.post(from: "forged-\(origin)", first: 1, last: 1)
            #expect(ledger.count <= 100)
        }
        #expect(ledger.post(from: "live", first: 3, last: 3) == .deliver(missing: 1), "the live origin was kept")
    }
}

/// Keeps every line logged through it.
struct CapturingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.message)") }
    }
}
