import AsyncMail
import AsyncMailPostgres
import AsyncMailTesting
import PostgresNIO
import Testing

/// A line whose positions are the relay table's.
struct FleetLine: Mail, Codable, Equatable {
    let text: String
}

/// A mailroom keeping `FleetLine` history, and its relay with fleet-wide positions.
private func fleetInstance(
    on channel: RelayChannel,
    keeping count: Int = 1_000
) async throws -> (
    Mailroom, PostgresRelay
) {
    let mailroom = Mailroom()
    await mailroom.retainHistory(FleetLine.self, count: count)
    let relay = try makeRelay(mailroom, on: channel)
    try relay.register(FleetLine.self, as: "fleet.line", positions: .fleetWide)
    return (mailroom, relay)
}

private let lobby = RoomID(name: "lobby")

/// Makes it look as if `mails` more were written on the channel and deleted by the retention
/// before anyone read them: the counters move on, and no row is left to say so.
private func loseUnread(_ mails: Int, on channel: RelayChannel) async throws {
    try await Database.execute(
        """
        UPDATE asyncmail_relay_counters SET last = last + \(mails)
        WHERE relay_table = 'asyncmail_relay' AND channel = \(channel.name) AND (stream = '' OR stream LIKE 'fleet.line/%')
        """
    )
}

extension RelayTests {
    // MARK: Fleet-wide positions

    @Test(
        "a position given on one instance resumes on another: exactly what it missed, in the table's order, then live"
    )
    func positionResumesOnAnotherInstance() async throws {
        let channel = try freshChannel()
        let (a, relayA) = try await fleetInstance(on: channel)
        let (b, relayB) = try await fleetInstance(on: channel)
        try await start(relayA)
        try await start(relayB)
        let onA = try await a.subscribe(to: FleetLine.self, from: .only(lobby), after: nil)
        let watcherOnB = try await b.subscribe(to: FleetLine.self, from: .only(lobby), after: nil)
        for number in 1...5 { await a.post(FleetLine(text: "early \(number)"), from: lobby) }
        let read = try await first(5, of: onA.mail)
        #expect(read.map(\.mail.text) == (1...5).map { "early \($0)" }, "the poster hears its own lines from the table")
        let sequences = read.map(\.position.sequence)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 + 1 }, "consecutive: \(sequences)")

        // Ten more while the client is away, half on each instance.
        for number in 1...10 {
            await (number.isMultiple(of: 2) ? a : b).post(FleetLine(text: "away \(number)"), from: lobby)
        }
        let order = try await first(15, of: watcherOnB.mail).suffix(10)  // the table's order, as B delivers it
        let resumed = try await b.subscribe(to: FleetLine.self, from: .only(lobby), after: read.last!.position)
        #expect(resumed.gap == nil)
        await a.post(FleetLine(text: "live"), from: lobby)
        let heard = try await first(11, of: resumed.mail)
        #expect(heard.map(\.mail.text) == order.map(\.mail.text) + ["live"], "exactly what it missed, then live")
        #expect(heard.map(\.position).prefix(10) == order.map(\.position)[...], "the same positions on both")
        #expect(Set((1...10).map { "away \($0)" }) == Set(order.map(\.mail.text)))
        #expect(relayA.counters.missing == 0 && relayB.counters.missing == 0)
    }

    @Test("a new instance fills its history from the table, and resumes a position another instance gave")
    func newInstanceFillsItsHistory() async throws {
        let channel = try freshChannel()
        let (a, relayA) = try await fleetInstance(on: channel)
        try await start(relayA)
        let onA = try await a.subscribe(to: FleetLine.self, from: .only(lobby), after: nil)
        await a.post(contentsOf: (1...6).map { FleetLine(text: "\($0)") }, from: lobby)
        await a.post(FleetLine(text: "7"), from: lobby)
        let positions = try await first(7, of: onA.mail).map(\.position)
        try await relayA.flush()

        let (c, relayC) = try await fleetInstance(on: channel, keeping: 5)
        try await start(relayC)
        let resumed = try await c.subscribe(to: FleetLine.self, from: .only(lobby), after: positions[2])
        #expect(resumed.gap == nil, "the history holds 4 to 7")
        let old = try await c.subscribe(to: FleetLine.self, from: .only(lobby), after: positions[0])
        #expect(old.gap == HistoryGap(code: .expired, missed: 1), "it keeps 5: mail 2 is not kept")
        await c.post(FleetLine(text: "8"), from: lobby)
        #expect(try await first(5, of: resumed.mail).map(\.mail.text) == ["4", "5", "6", "7", "8"])
        #expect(try await first(6, of: old.mail).map(\.mail.text) == ["3", "4", "5", "6", "7", "8"])
    }

    @Test("mail deleted before a relay read it is reported the moment the relay comes back, exactly")
    func lossIsReportedOnComingBack() async throws {
        let channel = try freshChannel()
        let (a, relayA) = try await fleetInstance(on: channel)
        let (b, relayB) = try await fleetInstance(on: channel)
        try await start(relayA)
        try await start(relayB)
        let onB = try await b.subscribe(to: FleetLine.self, from: .only(lobby), after: nil)
        await a.post(FleetLine(text: "seen"), from: lobby)
        let seen = try await first(1, of: onB.mail)[0].position

        // While B is away, 7 lines are written and deleted; nobody posts again.
        let events = relayB.events()
        try await loseUnread(7, on: channel)
        try await Database.terminate(relayB.applicationName)
        try await awaitEvents(1, from: events) { $0.code == .expired }
        #expect(relayB.counters.missing == 7)
        let resumed = try await b.subscribe(to: FleetLine.self, from: .only(lobby), after: seen)
        #expect(resumed.gap == HistoryGap(code: .expired, missed: 7), "a resuming client is told the same count")

        // Deleted between two rows read while listening: reported as the later row is read.
        try await loseUnread(3, on: channel)
        await a.post(FleetLine(text: "after"), from: lobby)
        try await awaitEvents(1, from: events) { $0 == .expired(mails: 3) }
        #expect(try await first(1, of: resumed.mail).map(\.mail.text) == ["after"])
        #expect(relayB.counters.missing == 10)
        try await waitUntil("A lost the same rows to the same retention") { relayA.counters.missing == 10 }
    }

    @Test("rows whose positions do not fit their post are rejected and counted; nothing crashes, the relay goes on")
    func forgedPositionsAreRejected() async throws {
        let channel = try freshChannel()
        let (a, relayA) = try await fleetInstance(on: channel)
        let (b, relayB) = try await fleetInstance(on: channel)
        try await start(relayA)
        try await start(relayB)
        let onB = try await b.subscribe(to: FleetLine.self, after: nil)
        // (mails, stream, epoch, first) for a one-line fleet.line post of an origin of its own.
        let forged: [(Int64?, String, Int64?, Int64?)] = [
            (2, "fleet.line/", 7, 1),  // a count its post does not have
            (1, "fleet.line/", 0, 1),  // no epoch a relay draws
            (1, "fleet.line/", 7, -5),  // a position before the first
            (1, "fleet.line/", 7, Int64.max),  // past the last
            (1, "chat.line/", 7, 1),  // another type's room
            (1, "fleet.line/", nil, nil),  // a room without positions
            (1, "fleet.line", 7, 1),  // a whole type's stream, as relays numbered before rooms
            (1, String(repeating: "fleet.line/", count: 7_000), 7, 1),  // a key longer than any room's
        ]
        for (index, (mails, stream, epoch, first)) in forged.enumerated() {
            let payload = #"{"o":"forger\#(index)","n":1,"t":"fleet.line","c":1,"m":[{"text":"forged"}]}"#
            try await Database.execute(
                """
                INSERT INTO asyncmail_relay (channel, payload, channel_first, mails, stream, stream_epoch, stream_first)
                VALUES (\(channel.name), \(payload), 9223372036854775000, \(mails), \(stream), \(epoch), \(first))
                """
            )
        }
        await a.post(FleetLine(text: "genuine"), from: lobby)
        #expect(try await first(1, of: onB.mail).map(\.mail.text) == ["genuine"], "nothing forged was delivered")
        #expect(relayB.counters.rejected == forged.count)
        try await waitUntil("A read them too") { relayA.counters.rejected == forged.count }
        #expect(relayB.counters.missing == 0, "a forged row's far channel number reports no loss")
    }

    @Test("a post the relay cannot take is delivered at once without a position; stopped, the type is local again")
    func unroutablePostsStayLocal() async throws {
        let channel = try freshChannel()
        let (a, relayA) = try await fleetInstance(on: channel)
        let running = try await start(relayA)
        let plain = await a.subscribe(to: FleetLine.self)
        // An object sender cannot travel: delivered here at once.
        await a.post(FleetLine(text: "object"), from: Speaker())
        #expect(try await first(1, of: plain).map(\.text) == ["object"])
        try await stop(running)
        let positioned = try await a.subscribe(to: FleetLine.self, after: nil)
        #expect(await a.post(FleetLine(text: "stopped"), from: lobby).delivered == 2, "at once, to both")
        #expect(try await first(1, of: positioned.mail).map(\.mail.text) == ["stopped"])
    }
}
