import AsyncMailTesting
import Testing

@testable import AsyncMail

// History and resume against a model, in two parts per seed (`swift test --filter Model`, which
// `ASYNCMAIL_MODEL_SEED` and `ASYNCMAIL_MODEL_OPERATIONS` steer as they steer `ModelTests`):
// - one at a time: random posts, resumes (from a kept, an expired, a forged, another epoch's, another
//   type's position, or live), drops, limit changes and counts, each predicted exactly by a
//   sequential model; at the end every stream must hold exactly what the model says;
// - racing: posters and resumers at once; every resumed stream must be the history's order after
//   its position (or its gap), filtered by its sender, each mail once.

/// One mail in the model's log: its number in its room and in the type (its stamp), its id and
/// its room (nil: posted with no sender).
private struct Logged: Equatable {
    let sequence: UInt64
    let stamp: UInt64
    let id: Int
    let room: String?
}

private enum Rooms {
    static let all = ["r1", "r2", "r3"]
}

/// A resumed subscription in the model: its stream, its room (nil: every room, with the type's
/// positions) and filter, and what it must yield.
private final class ModelResume {
    let stream: AsyncStream<Positioned<Ping>>
    let room: String?
    let evenOnly: Bool
    var expected: [Logged]

    init(stream: AsyncStream<Positioned<Ping>>, room: String?, evenOnly: Bool, expected: [Logged]) {
        (self.stream, self.room, self.evenOnly, self.expected) = (stream, room, evenOnly, expected)
    }

    func hears(_ mail: Logged) -> Bool {
        (room == nil || mail.room == room) && (!evenOnly || mail.id.isMultiple(of: 2))
    }

    /// The number it sees a mail by: the room's, or the type's stamp.
    func number(_ mail: Logged) -> UInt64 { room == nil ? mail.stamp : mail.sequence }
}

@Suite(
    "History against a model: resumes, gaps and refusals predicted exactly, room by room",
    .tags(.model)
)
struct HistoryModelTests {
    @Test("one operation at a time, every outcome predicted", arguments: modelSeeds)
    func sequential(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let mailroom = Mailroom()
        var limit = Int.random(in: 1...12, using: &random)
        await mailroom.retainHistory(Ping.self, count: limit)
        await mailroom.retainHistory(Pong.self, count: 4)
        let other = Mailroom()
        await other.retainHistory(Ping.self, count: 4)
        let otherEpoch = try await other.subscribe(to: Ping.self, from: .only(RoomID("r1")), after: nil)
        await other.post(Ping(id: 0), from: RoomID("r1"))
        let foreign = try await otherEpoch.mail.first(1)[0].position
        let pongs = try await mailroom.subscribe(to: Pong.self, after: nil)
        await mailroom.post(Pong(id: 0))
        let pong = try await pongs.mail.first(1)[0].position

        let plain = await mailroom.subscribe(to: Ping.self)  // an ordinary subscription beside them
        var plainExpected = 0
        // Per room (nil: no sender): its log, and the index in it of the oldest kept mail.
        var logs: [String?: [Logged]] = [:]
        var keptFrom: [String?: Int] = [:]
        var stamps: UInt64 = 0
        func trim() {
            for (room, log) in logs { keptFrom[room] = max(keptFrom[room] ?? 0, log.count - limit) }
        }
        func kept(_ room: String?) -> ArraySlice<Logged> { (logs[room] ?? [])[(keptFrom[room] ?? 0)...] }
        var allKept: [Logged] { logs.keys.flatMap { kept($0) }.sorted { $0.stamp < $1.stamp } }
        var resumes: [ModelResume] = []
        var nextID = 1
        let replay = "replay: ASYNCMAIL_MODEL_SEED=\(seed) swift test --filter Model"
        let stream = RoomDigest.fnv1a(String(reflecting: Ping.self))
        func position(_ sequence: UInt64, in room: String?) -> MailPosition {
            MailPosition(
                epoch: pong.epoch,
                stream: stream,
                room: room.map { RoomDigest.of(SenderKey(RoomID($0))) } ?? .max,
                sequence: sequence
            )
        }

        for step in 0..<(operationsPerSeed / 4) {
            // A step posts to every resumed stream so far and rarely suspends: each one lets the
            // tests beside it run (Tests/README.md, rule 7).
            await Task.yield()
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<45:
                let count = Int.random(in: 1...3, using: &random)
                let ids = Array(nextID..<(nextID + count))
                nextID += count
                let room = Bool.random(using: &random) ? nil : Rooms.all.randomElement(using: &random)!
                let mails = ids.map { Ping(id: $0) }
                let receipt: Receipt
                switch (room, count) {
                case (nil, 1): receipt = await mailroom.post(mails[0])
                case (nil, _): receipt = await mailroom.post(contentsOf: mails)
                case (let room?, 1): receipt = await mailroom.post(mails[0], from: RoomID(room))
                case (let room?, _): receipt = await mailroom.post(contentsOf: mails, from: RoomID(room))
                }
                var delivered = count
                plainExpected += count
                for id in ids {
                    stamps += 1
                    let logged = Logged(
                        sequence: UInt64((logs[room] ?? []).count + 1),
                        stamp: stamps,
                        id: id,
                        room: room
                    )
                    logs[room, default: []].append(logged)
                    for resume in resumes where resume.hears(logged) {
                        resume.expected.append(logged)
                        delivered += 1
                    }
                }
                trim()
                #expect(receipt == Receipt(delivered: delivered), "step \(step): post; \(replay)")
            case 45..<75:
                // nil: every room, with the type's positions.
                let room = Bool.random(using: &random) ? nil : Rooms.all.randomElement(using: &random)!
                let evenOnly = Int.random(in: 0..<4, using: &random) == 0
                var senders = Senders.everyone
                if let room { senders = .only(RoomID(room)) }
                var filter: (@Sendable (Ping) -> Bool)?
                if evenOnly { filter = { $0.id.isMultiple(of: 2) } }
                let resume = ModelResume(stream: AsyncStream { nil }, room: room, evenOnly: evenOnly, expected: [])
                let newest = room == nil ? stamps : UInt64((logs[room] ?? []).count)
                let keptHere = room == nil ? allKept : Array(kept(room))
                let choice = Int.random(in: 0..<11, using: &random)
                var after: MailPosition?
                var expectedGap: HistoryGap?
                var expectedError: PositionError?
                var from: UInt64 = newest  // replay what is after this number
                switch choice {
                case 0..<2:
                    after = nil
                case 2..<6:
                    let sequence = UInt64.random(in: 0...newest, using: &random)
                    after = position(sequence, in: room)
                    from = sequence
                    let later = keptHere.filter { resume.number($0) > sequence }.count
                    let missed = Int(newest - sequence) - later
                    if missed > 0 {
                        expectedGap = HistoryGap(code: .expired, missed: missed)
                        if room != nil { from = newest - UInt64(later) }
                    }
                case 6:
                    after = foreign
                    expectedGap = HistoryGap(code: .otherEpoch, missed: nil)
                    if room == nil { expectedError = .severalRooms }
                case 7:
                    let sequence = newest + UInt64.random(in: 1...1_000, using: &random)
                    after = position(sequence, in: room)
                    expectedError = .notYetPosted(sequence, newest: newest)
                case 8:
                    after = pong
                    expectedError = .otherMailType
                case 9:
                    // Another room's position, or a room's given to a subscription to every room.
                    let elsewhere = Rooms.all.filter { $0 != room }.randomElement(using: &random)!
                    after = position(0, in: elsewhere)
                    expectedError = room == nil ? .severalRooms : .otherRoom
                default:
                    after = .oldestKept
                    from = 0
                }
                do {
                    let resumed = try await mailroom.subscribe(
                        to: Ping.self,
                        from: senders,
                        after: after,
                        where: filter
                    )
                    #expect(expectedError == nil, "step \(step): resume should have thrown; \(replay)")
                    #expect(resumed.gap == expectedGap, "step \(step): gap; \(replay)")
                    let start: UInt64 =
                        after == .oldestKept ? (keptHere.first.map { resume.number($0) - 1 } ?? newest) : from
                    #expect(resumed.start == position(start, in: room), "step \(step): start; \(replay)")
                    let filed = ModelResume(stream: resumed.mail, room: room, evenOnly: evenOnly, expected: [])
                    filed.expected = keptHere.filter { filed.number($0) > from && filed.hears($0) }
                    resumes.append(filed)
                } catch {
                    #expect(error as? PositionError == expectedError, "step \(step): resume refused; \(replay)")
                }
            case 75..<85 where !resumes.isEmpty:
                // Dropping the stream (the model's only reference) ends the subscription.
                resumes.remove(at: Int.random(in: 0..<resumes.count, using: &random))
            case 85..<90:
                limit = Int.random(in: 1...12, using: &random)
                await mailroom.retainHistory(Ping.self, count: limit)
                trim()
            default:
                let room = Rooms.all.randomElement(using: &random)!
                #expect(
                    await mailroom.subscriberCount(Ping.self) == resumes.count + 1,
                    "step \(step): count; \(replay)"
                )
                #expect(
                    await mailroom.subscriberCount(Ping.self, from: .only(RoomID(room)))
                        == resumes.count { $0.room == room || $0.room == nil } + 1,  // and the probe: every room
                    "step \(step): count from \(room); \(replay)"
                )
            }
        }
        await mailroom.close()
        for (index, resume) in resumes.enumerated() {
            let got = try await resume.stream.collect()
            #expect(
                got.map { [$0.position.sequence, UInt64($0.mail.id)] }
                    == resume.expected.map { [resume.number($0), UInt64($0.id)] },
                "resume \(index) (room \(resume.room ?? "every")): what it holds; \(replay)"
            )
        }
        #expect(try await plain.collect().count == plainExpected, "the ordinary subscription heard every post")
    }

    @Test(
        "posts racing resumes: each resumed stream is the history's order after its position, once",
        .serialized,
        arguments: modelSeeds
    )
    func racing(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let mailroom = Mailroom()
        let limit = Int.random(in: 50...2_000, using: &random)
        await mailroom.retainHistory(Ping.self, count: limit)
        let perPoster = max(operationsPerSeed / 10, 100)
        let resumers = 8
        // What each poster posts: an id and a room (or none), drawn before anything runs.
        let posts = (0..<2).map { poster in
            (1...perPoster).map { index in
                (
                    id: poster * perPoster + index,
                    room: Bool.random(using: &random) ? Rooms.all.randomElement(using: &random) : nil
                )
            }
        }
        let rooms = Dictionary(uniqueKeysWithValues: posts.joined().map { ($0.id, $0.room) })
        let plans = (0..<resumers).map { _ in
            let room = Bool.random(using: &random) ? nil : Rooms.all.randomElement(using: &random)!
            // A room's probe waits for no more mail than the room is sent.
            let sent = posts.joined().count { room == nil || $0.room == room }
            return (
                delay: Int.random(in: 0...sent, using: &random),
                room: room,
                live: Int.random(in: 0..<4, using: &random) == 0,
                back: UInt64.random(in: 0...UInt64(limit * 2), using: &random)
            )
        }
        // The history's order, as one subscription made before any post hears it.
        let witness = try await mailroom.subscribe(to: Ping.self, after: nil)
        let (probing, resumed) = (Locked(0), Locked(0))
        typealias Result = (index: Int, after: UInt64?, gap: HistoryGap?, got: [Positioned<Ping>])
        let results = try await withThrowingTaskGroup(of: Result?.self) { group in
            for poster in 0..<2 {
                group.addTask {
                    // Every probe is live first, so each hears the posts it waits for.
                    try await waitUntil { probing.withLock { $0 } == resumers }
                    for (index, post) in posts[poster].enumerated() {
                        await cooperate(after: index)
                        if let room = post.room {
                            await mailroom.post(Ping(id: post.id), from: RoomID(room))
                        } else {
                            await mailroom.post(Ping(id: post.id))
                        }
                    }
                    return nil
                }
            }
            for (index, plan) in plans.enumerated() {
                group.addTask {
                    // Learn a recent position while the posters go on, then resume from it or before it.
                    let probe = try await mailroom.subscribe(
                        to: Ping.self,
                        from: plan.room.map { .only(RoomID($0)) } ?? .everyone,
                        after: nil
                    )
                    probing.withLock { $0 += 1 }
                    // The event is the posters' whole run, not one mail: its guard is sized for that,
                    // at the start of a run under ThreadSanitizer, with every suite beside it.
                    let seen = try await probe.mail.first(plan.delay, within: .seconds(120)).last?.position
                    let after =
                        plan.live
                        ? nil
                        : seen.map {
                            MailPosition(
                                epoch: $0.epoch,
                                stream: $0.stream,
                                room: $0.room,
                                sequence: $0.sequence - min(plan.back, $0.sequence)
                            )
                        }
                    var senders = Senders.everyone
                    if let room = plan.room { senders = .only(RoomID(room)) }
                    let resumption = try await mailroom.subscribe(to: Ping.self, from: senders, after: after)
                    resumed.withLock { $0 += 1 }
                    var got: [Positioned<Ping>] = []
                    for await mail in resumption.mail { got.append(mail) }  // until the mailroom closes
                    return (index, after?.sequence, resumption.gap, got)
                }
            }
            var results: [Result] = []
            var posters = 0
            while let result = try await group.next() {
                guard let result else {
                    posters += 1
                    if posters == 2 {
                        // Every post is made and every resume filed: closing ends each stream after its last mail.
                        try await waitUntil(within: .seconds(120)) { resumed.withLock { $0 } == resumers }
                        await mailroom.close()
                    }
                    continue
                }
                results.append(result)
            }
            return results
        }
        let order = try await witness.mail.collect()
        #expect(order.map(\.position.sequence) == Array(1...UInt64(2 * perPoster)), "the witness heard every mail once")
        #expect(Set(order.map(\.mail.id)).count == 2 * perPoster)
        for result in results {
            let plan = plans[result.index]
            let hears = { (mail: Positioned<Ping>) in plan.room == nil || rooms[mail.mail.id] == plan.room }
            // What this resumer numbers mail by: the type's stamps, or the room's own numbers, which
            // follow the witness's order within the room.
            let numbered: [(number: UInt64, id: Int)] =
                plan.room == nil
                ? order.map { ($0.position.sequence, $0.mail.id) }
                : order.filter(hears).enumerated().map { (UInt64($0.offset + 1), $0.element.mail.id) }
            let got = result.got.map(\.position.sequence)
            if let after = result.after {
                #expect(
                    result.gap == nil || result.gap?.code == .expired,
                    "resumer \(result.index): only an expired gap"
                )
                let skipped = result.gap?.missed ?? 0
                let later = numbered.filter { $0.number > after }.map(\.number)
                if plan.room != nil {
                    // A room drops its oldest: the gap is the front of what came after.
                    #expect(
                        got == Array(later.dropFirst(skipped)),
                        "resumer \(result.index) after \(after), seed \(seed)"
                    )
                } else {
                    // Rooms drop each by their own limits: what it got and what it missed are all that came after.
                    #expect(
                        got.count + skipped == later.count && got == got.sorted() && Set(got).isSubset(of: later),
                        "resumer \(result.index) after \(after), seed \(seed)"
                    )
                }
            } else {
                #expect(result.gap == nil)
                let expected = numbered.map(\.number)
                #expect(
                    got.isEmpty || Array(expected.drop { $0 < got[0] }) == got,
                    "live resumer \(result.index): a contiguous tail of the order, seed \(seed)"
                )
            }
            #expect(
                result.got.map(\.mail.id) == result.got.map { numbered[Int($0.position.sequence) - 1].id },
                "resumer \(result.index): ids agree with the witness's order"
            )
        }
    }
}
