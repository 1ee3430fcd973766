import AsyncMail
import AsyncMailTesting
import Foundation
@_spi(AsyncMailRelay) import RelayWire
import Testing

// A room's key is read back from the table: untrusted. Real keys read back as their room; any
// other string, mutated or random, is refused with an error or read as the room it spells, and
// never traps or reads past `maximumBytes`.
@Suite("A room's key in the relay table is untrusted input")
struct RoomStreamTests {
    private func registry() throws -> WireRegistry {
        let registry = WireRegistry()
        try registry.register(sender: RoomID.self, as: "room")
        try registry.register(sender: String.self, as: "text")
        return registry
    }

    @Test("a post's room key reads back as its room, and the wire name is the part before the slash")
    func roundTrip() throws {
        let registry = try registry()
        let sender = try JSONEncoder().encode(RoomID(name: "lobby"))
        let key = RoomStream.key(type: "chat.line", senderType: "room", sender: sender)
        #expect(RoomStream.wireName(of: key) == "chat.line")
        #expect(try RoomStream.sender(of: key, registry: registry) as? RoomID == RoomID(name: "lobby"))
        let none = RoomStream.key(type: "chat.line", senderType: nil, sender: nil)
        #expect(none == "chat.line/")
        #expect(try RoomStream.sender(of: none, registry: registry) == nil)
        #expect(RoomStream.wireName(of: "chat.line") == nil, "a whole type's key, as relays wrote before rooms")
        #expect(RoomStream.wireName(of: "") == nil, "the channel's own counter")
    }

    @Test(
        "mutated, random and oversized keys are refused or read as the room they spell",
        arguments: [1, 2] as [UInt64]
    )
    func fuzz(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let registry = try registry()
        let alphabet = Array(#"chat.line/room:{"name":"lobby"}text\u{0}é٣[]0-9"#.unicodeScalars)
        let bases = [
            #"chat.line/room:{"name":"lobby"}"#, "chat.line/text:\"hall\"", "chat.line/", "chat.line/other:1",
            String(repeating: "x", count: RoomStream.maximumBytes + 1),
        ]
        var decoded = 0
        for index in 0..<4_000 {
            // Long and synchronous: two seeds held both of a 2-core machine's pool threads for
            // 6.6 s under load, and every wait beside them stalled (Tests/README.md, rule 7).
            if index % 100 == 99 { await Task.yield() }
            var scalars = Array(bases.randomElement(using: &random)!.unicodeScalars)
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let at = Int.random(in: 0...scalars.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where at < scalars.count: scalars.remove(at: at)
                case 1 where at < scalars.count: scalars[at] = alphabet.randomElement(using: &random)!
                default: scalars.insert(alphabet.randomElement(using: &random)!, at: at)
                }
            }
            var key = ""
            key.unicodeScalars.append(contentsOf: scalars)
            _ = RoomStream.wireName(of: key)
            if (try? RoomStream.sender(of: key, registry: registry)) != nil { decoded += 1 }
        }
        #expect(decoded > 0, "some edits leave a real room: the decoding path is exercised too")
    }
}
