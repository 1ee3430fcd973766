import Testing

@testable import AsyncMail

@Suite("Value table")
struct ValueTableTests {
    @Test("colliding senders are kept, replaced and removed one by one, leaving nothing behind")
    func collidingEntries() {
        var table = ValueTable<Int>()
        let (north, south, east) = (
            ValueSender(Colliding("north")), ValueSender(Colliding("south")), ValueSender(Colliding("east"))
        )
        table[north] = 1
        table[south] = 2
        table[east] = 3
        #expect(table._slots.count == 1, "one digest for all three")
        #expect([table[north], table[south], table[east]] == [1, 2, 3])
        #expect(table[ValueSender(Colliding("west"))] == nil)

        table[south] = 20
        #expect([table[north], table[south], table[east]] == [1, 20, 3])

        table[south] = nil
        #expect(table[south] == nil)
        #expect(table.values.sorted() == [1, 3])
        table[north] = nil
        #expect(table.values == [3])
        table[east] = nil
        #expect(table.isEmpty)
        table[east] = nil
        #expect(table.isEmpty, "removing what is not there changes nothing")
    }

    @Test("a sender classified at post time finds the entry a subscription filed, and only the equal one")
    func postedKeysMatchStoredKeys() {
        var table = ValueTable<String>()
        table[ValueSender(RoomID("lobby"))] = "lobby"
        table[ValueSender(1 as Int)] = "one"
        #expect(table[ValueSender(ifHashable: RoomID("lobby"))!] == "lobby")
        #expect(table[ValueSender(ifHashable: 1 as Int)!] == "one")
        #expect(table[ValueSender(ifHashable: 1 as Int64)!] == nil, "the type is part of the match")
        #expect(table[ValueSender(ifHashable: "lobby")!] == nil)
    }
}
