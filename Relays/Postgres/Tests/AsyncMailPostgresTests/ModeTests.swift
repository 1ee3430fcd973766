import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire
import Testing

@testable import AsyncMailPostgres

/// The modes' numbering and the wire text they produce, without a database.
@Suite("Modes, without a database")
struct ModeTests {
    private static let table = RelayTable(
        name: "mode_tests",
        channel: "mode_tests",
        logger: Logger(label: "mode-tests")
    )

    private static func post(mails: Int) -> OutboundPost {
        OutboundPost(type: "chat.line", senderType: nil, sender: nil, mails: (0..<mails).map { Data("\($0)".utf8) })
    }

    @Test("durable mode numbers each post's mails on from the last batch's, once per batch")
    func durableNumbering() throws {
        let durable = DurableMode(table: Self.table)
        let first = durable.batch(
            of: [.post(Self.post(mails: 2)), .heartbeat, .post(Self.post(mails: 3))],
            origin: "origin-a",
            signer: nil
        )
        #expect(first.mails == 5)
        #expect(first.rows.count == 2, "one row per post; a heartbeat is no row")
        #expect(first.rows[0].contains(#""n":1,"#) && first.rows[0].contains(#""c":2,"#))
        #expect(first.rows[1].contains(#""n":3,"#) && first.rows[1].contains(#""c":3,"#))
        let second = durable.batch(of: [.post(Self.post(mails: 1))], origin: "origin-a", signer: nil)
        #expect(second.rows[0].contains(#""n":6,"#), "numbers go on; a retried batch keeps its own rows")
    }

    @Test("durable rows are envelopes a receiver delivers in order, and a repeat is a duplicate")
    func durableRowsRoundTrip() throws {
        let registry = WireRegistry()
        try registry.register(Line.self, as: "chat.line")
        let durable = DurableMode(table: Self.table)
        let line = try JSONEncoder().encode(Line(text: "hi"))
        let post = OutboundPost(type: "chat.line", senderType: nil, sender: nil, mails: [line])
        let batch = durable.batch(of: [.post(post), .post(post)], origin: "elsewhere", signer: nil)
        let receiver = InboundReceiver(registry: registry, signer: nil, ownOrigin: "here", forgetAfter: 3)
        for row in batch.rows {
            guard case .deliver(let delivered, _, let notes) = receiver.receive(row) else {
                Issue.record("row not delivered: \(row)")
                return
            }
            #expect(delivered.count == 1)
            #expect(notes.isEmpty)
        }
        guard case .report(let notes) = receiver.receive(batch.rows[0]) else {
            Issue.record("a repeated row was delivered again")
            return
        }
        #expect(notes == [.duplicate(mails: 1)])
    }

    @Test("an ephemeral spill notice is whole JSON, built in Swift, naming its row")
    func spillNotice() throws {
        let registry = WireRegistry()
        let notice = Self.post(mails: 4).spillNotice(origin: "elsewhere", firstNumber: 7, row: 42)
        #expect(notice.hasSuffix("}"))
        #expect(try JSONSerialization.jsonObject(with: Data(notice.utf8)) is [String: Any])
        let receiver = InboundReceiver(
            registry: registry,
            signer: nil,
            ownOrigin: "here",
            followsSpillNotices: true,
            forgetAfter: 3
        )
        guard case .readSpilled(let spilled) = receiver.receive(notice) else {
            Issue.record("the notice was not followed: \(notice)")
            return
        }
        #expect(spilled.origin == "elsewhere")
        #expect(spilled.firstNumber == 7)
        #expect(spilled.count == 4)
        #expect(spilled.row == 42)
    }
}

private struct Line: Mail, Codable, Equatable {
    let text: String
}
