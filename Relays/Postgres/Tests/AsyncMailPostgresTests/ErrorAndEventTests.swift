import AsyncMailPostgres
import Testing

@Suite("Errors and events: a code to switch over, the values behind it, words that say what to do")
struct ErrorAndEventTests {
    @Test("an event keeps its values under its code, and equals the event its factory makes")
    func eventsCarryTheirValues() {
        let gap = RelayEvent.gap(origin: "instance-a", missing: 50)
        #expect(gap.code == .gap)
        #expect(gap.origin == "instance-a" && gap.mails == 50)
        #expect(gap.reason == nil && gap.posts == nil && gap.bytes == nil && gap.wireName == nil)
        #expect(gap == .gap(origin: "instance-a", missing: 50))
        #expect(gap != .gap(origin: "instance-a", missing: 49))
        #expect(gap.description == "gap: 50 mails from instance-a lost")

        let oversize = RelayEvent.oversize(type: "chat.line", bytes: 70_000)
        #expect(oversize.code == .oversize && oversize.wireName == "chat.line" && oversize.bytes == 70_000)
        #expect(oversize.description.contains("raise maximumMailBytes"))
        #expect(RelayEvent.queueOverflow(posts: 3).posts == 3)
        #expect(RelayEvent.unknownType("chat.v9").description.contains("register it"))
        let expired = RelayEvent.presenceExpired(instance: "instance-b", entries: 3)
        #expect(expired.code == .presenceExpired && expired.origin == "instance-b" && expired.entries == 3)
        #expect(expired.description == "presence: instance instance-b stopped beating; its 3 entries were removed")
        #expect(gap.entries == nil)
    }

    @Test("a count of one reads in the singular: '1 mail', '1 entry was removed'")
    func countsOfOne() {
        #expect(RelayEvent.gap(origin: "a", missing: 1).description == "gap: 1 mail from a lost")
        #expect(
            RelayEvent.presenceExpired(instance: "b", entries: 1).description
                == "presence: instance b stopped beating; its 1 entry was removed"
        )
        #expect(RelayEvent.queueOverflow(posts: 1).description.hasPrefix("outbound queue full: 1 post not relayed;"))
        #expect(RelayEvent.oversize(type: "t", bytes: 1).description.hasPrefix("oversize: a t of 1 byte was"))
    }

    @Test("every code is distinct and named, so a dashboard can key on it")
    func codesAreDistinct() {
        let events: [RelayEvent.Code] = [
            .listening, .disconnected, .gap, .publishFailed, .oversize, .unknownType, .decodeFailed, .queueOverflow,
            .rejected, .expired, .presenceExpired,
        ]
        #expect(Set(events).count == events.count)
        #expect(Set(events.map(\.description)).count == events.count)
        let errors: [RelayError.Code] = [.tableSetupFailed, .notRunning, .notRelayed]
        #expect(Set(errors.map(\.description)).count == errors.count)
        let configuration: [RelayConfigurationError.Code] = [
            .invalidChannelName, .invalidWireName, .wireNameTaken, .typeAlreadyRegistered, .invalidTableName,
            .keyTooShort, .invalidEnvironmentVariable, .positionsUnavailable, .presenceUnavailable,
        ]
        #expect(Set(configuration.map(\.description)).count == configuration.count)
    }

    @Test("errors say what went wrong and what to do")
    func errorsSayWhatToDo() {
        let table = RelayError.tableSetupFailed(table: "relay", reason: "permission denied for schema public")
        #expect(table.code == .tableSetupFailed && table.table == "relay")
        #expect(table.description.contains("Grant the role CREATE"))
        #expect(RelayError.notRelayed(mails: 2).mails == 2)
        #expect(RelayError.notRunning.description.contains("run()"))
        let taken = RelayConfigurationError.wireNameTaken("chat.line", by: "ChatLine")
        #expect(taken.code == .wireNameTaken && taken.name == "chat.line" && taken.registered == "ChatLine")
        let port = RelayConfigurationError.invalidEnvironmentVariable("PGPORT", value: "x")
        #expect(port.name == "PGPORT" && port.value == "x")
        #expect(port.description.hasPrefix("PGPORT=\"x\" cannot be used"))
        #expect(RelayConfigurationError.keyTooShort(bytes: 16).bytes == 16)
    }
}
