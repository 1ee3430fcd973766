import Testing

@testable import AsyncMail

/// The loop of the lane protocol, driven by scripted attempts: no threads, no lanes.
@Suite("The lane protocol's loop: done, look again, or retired")
struct LaneAttemptTests {
    /// Hands out `script`'s attempts in turn and counts them.
    private final class Script {
        var attempts: [LaneAttempt<Int>]
        var made = 0
        init(_ attempts: [LaneAttempt<Int>]) { self.attempts = attempts }
        func next() -> LaneAttempt<Int> {
            made += 1
            return attempts.removeFirst()
        }
    }

    @Test("an attempt that is done at once is made once")
    func doneAtOnce() {
        let script = Script([.done(7)])
        #expect(Switchboard().retrying(script.next) == 7)
        #expect(script.made == 1)
    }

    @Test("stale attempts are made again until one is done")
    func staleThenDone() {
        let script = Script([.stale, .stale, .done(3)])
        #expect(Switchboard().retrying(script.next) == 3)
        #expect(script.made == 3)
    }

    @Test("a retired table ends the loop with nothing, stale attempts before it or not")
    func retired() {
        let script = Script([.stale, .retired, .done(1)])
        #expect(Switchboard().retrying(script.next) == nil)
        #expect(script.made == 2)
    }

    @Test("a closed switchboard files nothing in a room: the room's lane attempt is retired, its body never run")
    func roomLaneOfARetiredTable() {
        let switchboard = Switchboard()
        let table = switchboard.openTable(for: Ping.self)!
        switchboard.close()
        var ran = false
        let attempt = switchboard.inRoomLane(of: table, at: .value(ValueSender(2)), pinning: nil) { _, _ in ran = true }
        guard case .retired = attempt else {
            Issue.record("expected retired, got \(attempt)")
            return
        }
        #expect(!ran)
    }

    @Test("only a room's list has a lane: lists that hear several rooms, and the taps', allocate none")
    func onlyRoomsHaveLanes() {
        let switchboard = Switchboard()
        let table = switchboard.openTable(for: Ping.self)!
        #expect(table._everyone._lane == nil)
        #expect(table._positionedEveryone._lane == nil)
        #expect(switchboard._taps._lane == nil)
        let room = table.withShard(RouteTable<Ping>.shardIndex(at: .value(ValueSender(3)))!) { shard in
            shard.withLock {
                var departed: [any Finishable] = []
                return table.room(at: .value(ValueSender(3)), pinning: nil, in: shard, departed: &departed)
            }
        }
        #expect(room?._lane != nil)
    }

    @Test("a room's lane attempt runs its body once, under the room it made, and then its follow-up")
    func roomLaneRunsOnce() {
        let switchboard = Switchboard()
        let table = switchboard.openTable(for: Ping.self)!
        var bodies = 0
        var followUps: [Int] = []
        let followUp = { (count: Int) in followUps.append(count) }
        let attempt = switchboard.inRoomLane(of: table, at: .value(ValueSender(2)), pinning: nil, andThen: followUp) {
            _,
            room in
            bodies += 1
            return room.count
        }
        guard case .done(let count) = attempt else {
            Issue.record("expected done, got \(attempt)")
            return
        }
        #expect(count == 0)
        #expect(bodies == 1)
        #expect(followUps == [0])
    }
}
