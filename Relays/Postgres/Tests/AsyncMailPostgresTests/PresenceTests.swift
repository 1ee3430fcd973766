@_spi(AsyncMailRelay) import AsyncMailRelay
import AsyncMailTesting
import Foundation
@_spi(AsyncMailRelay) import RelayWire
import Testing

@testable import AsyncMailPostgres

@Suite("Presence, without a database")
struct PresenceTests {
    let signer = try! RelayKey(Array(repeating: UInt8(3), count: 32)).signer

    func columns(
        topic: String? = "lobby",
        key: String? = "ann",
        instance: String? = "instance-a",
        meta: String? = #"{"name":"Ann"}"#,
        signature: String? = ""
    ) -> PresenceRecord.Columns {
        PresenceRecord.Columns(topic: topic, key: key, instance: instance, meta: meta, signature: signature)
    }

    @Test(
        "a row is accepted only with every column present, in bounds, of the right shape, and signed when a key is set"
    )
    func rowsAreChecked() throws {
        let good = try PresenceRecord.decode(columns(), channel: "chat", signer: nil).get()
        #expect(good == PresenceRecord(topic: "lobby", key: "ann", instance: "instance-a", meta: ["name": "Ann"]))
        let bad: [PresenceRecord.Columns] = [
            columns(topic: nil), columns(key: ""), columns(key: String(repeating: "k", count: 257)),
            columns(instance: ""), columns(instance: String(repeating: "i", count: 65)), columns(meta: "[]"),
            columns(meta: #"{"n":1}"#), columns(meta: "{"), columns(meta: String(repeating: " ", count: 4_097)),
            columns(signature: nil), columns(topic: "a\u{0}b"),
        ]
        for row in bad {
            #expect(throws: PresenceRecord.Rejection.self) {
                try PresenceRecord.decode(row, channel: "chat", signer: nil).get()
            }
        }

        let meta = PresenceRecord.json(of: ["name": "Ann"])
        let signature = PresenceRecord.signature(
            channel: "chat",
            topic: "lobby",
            key: "ann",
            instance: "instance-a",
            meta: meta,
            signer: signer
        )
        #expect(signature.utf8.count == PresenceRecord.maximumSignatureBytes)
        let signed = columns(meta: meta, signature: signature)
        #expect((try? PresenceRecord.decode(signed, channel: "chat", signer: signer).get()) == good)
        for forged in [
            columns(meta: meta), columns(key: "bob", meta: meta, signature: signature),
            columns(instance: "instance-b", meta: meta, signature: signature),
            columns(meta: #"{"name":"Eve"}"#, signature: signature),
        ] {
            #expect(throws: PresenceRecord.Rejection.self) {
                try PresenceRecord.decode(forged, channel: "chat", signer: signer).get()
            }
        }
        #expect(throws: PresenceRecord.Rejection.self, "another channel's row") {
            try PresenceRecord.decode(signed, channel: "other", signer: signer).get()
        }
    }

    @Test("changes start with the whole list, then each change; an entry's new metadata leaves and joins")
    func changesFollowTheReplica() async throws {
        let replica = PresenceReplica(origin: "me", limit: 100)
        _ = replica.track("mine", in: "lobby", meta: [:])
        var changes = PresenceChanges(replica: replica, topic: "lobby").makeAsyncIterator()
        #expect(await changes.next() == PresenceDiff(joins: [PresenceEntry(key: "mine", instance: "me")]))

        let ann = PresenceEntry(key: "ann", meta: ["v": "1"], instance: "them")
        _ = replica.replace("lobby", with: [ann])
        #expect(await changes.next() == PresenceDiff(joins: [ann]))
        let annAgain = PresenceEntry(key: "ann", meta: ["v": "2"], instance: "them")
        let diff = replica.replace("lobby", with: [annAgain])
        #expect(diff == PresenceDiff(joins: [annAgain], leaves: [ann]))
        #expect(await changes.next() == diff)
        _ = replica.replace("kitchen", with: [PresenceEntry(key: "al", instance: "them")])
        _ = replica.untrack("mine", in: "lobby")
        #expect(
            await changes.next() == PresenceDiff(leaves: [PresenceEntry(key: "mine", instance: "me")]),
            "another topic's change is not this topic's"
        )
        replica.end()
        #expect(await changes.next() == nil, "the relay stopped: the end")
        #expect(replica.list("lobby").isEmpty && replica.list("kitchen").isEmpty, "others' entries are forgotten")
    }

    @Test("a consumer that falls behind gets one diff to where the topic is now: bounded, and exact")
    func changesCoalesce() async throws {
        let replica = PresenceReplica(origin: "me", limit: 10_000)
        var changes = PresenceChanges(replica: replica, topic: "lobby").makeAsyncIterator()
        #expect(await changes.next() == PresenceDiff())
        var state: [PresenceEntry] = []
        for round in 0..<1_000 {
            state = (0..<(round % 7)).map { PresenceEntry(key: "k\($0 + round % 3)", instance: "them") }
            _ = replica.replace("lobby", with: state)
        }
        let diff = try #require(await changes.next())
        #expect(Set(diff.joins) == Set(state) && diff.leaves.isEmpty, "from nothing to the last list, nothing between")
    }

    @Test("other instances' entries stay within the limit; a flood of changed topics becomes one reading of all")
    func bounds() {
        let replica = PresenceReplica(origin: "me", limit: 5)
        _ = replica.replace("a", with: (0..<3).map { PresenceEntry(key: "\($0)", instance: "x") })
        #expect(replica.room(for: "b") == 2 && replica.room(for: "a") == 5)
        _ = replica.replace("a", with: [PresenceEntry(key: "me too", instance: "me")])
        #expect(replica.list("a").isEmpty, "this instance's rows come from itself, never from the table")
        for topic in 0..<5_000 { replica.topicChanged("t\(topic)") }
        let work = replica.takeWork()
        #expect(work.readAll && work.topics.count < PresenceReplica.topicsBeforeReadingAll)
    }
}
