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

/// One mail in the model's log: its sequence number, its id and the room it was posted from.
private struct Logged: Equatable {
    let sequence: UInt64
    let id: Int
    let room: String?
}

private enum Rooms {
    static let all = ["r1", "r2", "r3"]
}

/// A resumed subscription in the model: its stream, its pin and filter, and what it must yield.
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
}

@Suite("History against a model: resumes, gaps and refusals predicted exactly", .tags(.model))
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
        let otherEpoch = try await other.subscribe(to: Ping.self, after: nil)
        await other.post(Ping(id: 0))
        let foreign = try await otherEpoch.mail.first(1)[0].position
        let pongs = try await mailroom.subscribe(to: Pong.self, after: nil)
        await mailroom.post(Pong(id: 0))
        let pong = try await pongs.mail.first(1)[0].position

        let plain = await mailroom.subscribe(to: Ping.self)  // an ordinary subscription beside them
        var plainExpected = 0
        var log: [Logged] = []
        var keptFrom = 0  // the index in `log` of the oldest kept mail: limits only ever drop the oldest
        func trim() { keptFrom = max(keptFrom, log.count - limit) }
        var resumes: [ModelResume] = []
        var nextID = 1
        let replay = "replay: ASYNCMAIL_MODEL_SEED=\(seed) swift test --filter Model"

        func position(_ sequence: UInt64) -> MailPosition {
            MailPosition(epoch: pong.epoch, stream: RoomDigest.fnv1a(String(reflecting: Ping.self)), room: .max, sequence: sequence)
        }

        for step in 0..<(operationsPerSeed / 4) {
            let roll = Int.random(in: 0..<100, using: &random)
            let kept = log[keptFrom...]
            let newest = UInt64(log.count)
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
                for (offset, id) in ids.enumerated() {
                    let logged = Logged(sequence: newest + UInt64(offset) + 1, id: id, room: room)
                    log.append(logged)
                    for resume in resumes where resume.hears(logged) {
                        resume.expected.append(logged)
                        delivered += 1
                    }
                }
                trim()
                #expect(receipt == Receipt(delivered: delivered), "step \(step): post; \(replay)")
            case 45..<75:
                let room = Bool.random(using: &random) ? nil : Rooms.all.randomElement(using: &random)!
                let evenOnly = Int.random(in: 0..<4, using: &random) == 0
                var senders = Senders.everyone
                if let room { senders = .only(RoomID(room)) }
                var filter: (@Sendable (Ping) -> Bool)?
                if evenOnly { filter = { $0.id.isMultiple(of: 2) } }
                let choice = Int.random(in: 0..<10, using: &random)
                var after: MailPosition?
                var expectedGap: HistoryGap?
                var expectedError: PositionError?
                var from: UInt64 = newest  // replay what is after this sequence number
                switch choice {
                case 0..<2:
                    after = nil
                case 2..<6 where newest > 0:
                    let sequence = UInt64.random(in: 1...newest, using: &random)
                    after = position(sequence)
                    from = sequence
                    let firstKept = kept.first?.sequence ?? newest + 1
                    if sequence + 1 < firstKept {
                        expectedGap = HistoryGap(code: .expired, missed: Int(firstKept - sequence - 1))
                        from = firstKept - 1
                    }
                case 6:
                    after = foreign
                    expectedGap = HistoryGap(code: .otherEpoch, missed: nil)
                case 7:
                    let sequence = newest + UInt64.random(in: 1...1_000, using: &random)
                    after = position(sequence)
                    expectedError = .notYetPosted(sequence, newest: newest)
                case 8:
                    after = pong
                    expectedError = .otherMailType
                default:
                    after = newest > 0 ? position(newest) : nil  // the newest: nothing to replay
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
                    let resume = ModelResume(stream: resumed.mail, room: room, evenOnly: evenOnly, expected: [])
                    resume.expected = kept.filter { $0.sequence > from && resume.hears($0) }
                    resumes.append(resume)
                } catch {
                    #expect(error == expectedError, "step \(step): resume refused; \(replay)")
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
                        == resumes.count { $0.room == room },
                    "step \(step): count from \(room); \(replay)"
                )
            }
        }
        await mailroom.close()
        for (index, resume) in resumes.enumerated() {
            let got = try await resume.stream.collect()
            #expect(
                got.map { Logged(sequence: $0.position.sequence, id: $0.mail.id, room: nil) }
                    == resume.expected.map { Logged(sequence: $0.sequence, id: $0.id, room: nil) },
                "resume \(index): what it holds; \(replay)"
            )
        }
        #expect(try await plain.collect().count == plainExpected, "the ordinary subscription heard every post")
    }

    @Test(
        "posts racing resumes: each resumed stream is the history's order after its position, once",
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
            (
                delay: Int.random(in: 0...perPoster, using: &random),
                room: Bool.random(using: &random) ? nil : Rooms.all.randomElement(using: &random)!,
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
                    for post in posts[poster] {
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
                    let probe = try await mailroom.subscribe(to: Ping.self, after: nil)
                    probing.withLock { $0 += 1 }
                    let seen = try await probe.mail.first(plan.delay).last?.position
                    let after =
                        plan.live
                        ? nil
                        : seen.map {
                            MailPosition(
                                epoch: $0.epoch,
                                stream: $0.stream,
                                room: $0.room,
                                sequence: $0.sequence - min(plan.back, $0.sequence - 1)
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
                        try await waitUntil { resumed.withLock { $0 } == resumers }
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
            let got = result.got.map(\.position.sequence)
            if let after = result.after {
                #expect(
                    result.gap == nil || result.gap?.code == .expired,
                    "resumer \(result.index): only an expired gap"
                )
                let skipped = UInt64(result.gap?.missed ?? 0)
                let expected = order.filter { $0.position.sequence > after + skipped && hears($0) }
                #expect(
                    got == expected.map(\.position.sequence),
                    "resumer \(result.index) after \(after), seed \(seed)"
                )
            } else {
                #expect(result.gap == nil)
                let expected = order.filter(hears).map(\.position.sequence)
                #expect(
                    got.isEmpty || Array(expected.drop { $0 < got[0] }) == got,
                    "live resumer \(result.index): a contiguous tail of the order, seed \(seed)"
                )
            }
            #expect(
                result.got.map(\.mail.id) == result.got.map { order[Int($0.position.sequence) - 1].mail.id },
                "resumer \(result.index): ids agree with the witness's positions"
            )
        }
    }
}
