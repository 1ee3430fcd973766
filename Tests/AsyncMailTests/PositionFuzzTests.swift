import AsyncMailTesting
import Testing

@testable import AsyncMail

// A position comes back from a client, so its decoder is fuzzed: seeded mutations of real
// positions' strings, random bytes, and the boundaries of each part. Whatever the input, the
// decoder returns or throws `.malformed` (it never traps), reads no more than `maximumLength + 1`
// bytes, and accepts a string only if it is exactly some position's `description`.

/// Inputs per seed: about a second of decoding in a debug build.
private let inputsPerSeed = 50_000

@Suite("Positions are untrusted input: the decoder under fuzzing")
struct PositionFuzzTests {
    @Test("every position's string reads back as the same position, within maximumLength")
    func roundTrip() async {
        var random = SeededRandomNumberGenerator(seed: 31)
        let edges: [UInt64] = [0, 1, 9, 10, 15, 16, UInt64(UInt32.max), UInt64.max - 1, UInt64.max]
        for index in 0..<inputsPerSeed {
            await cooperate(after: index, every: 500)  // long and synchronous (Tests/README.md, rule 7)
            let epoch = index < edges.count ? edges[index] : random.next()
            let stream = UInt32(truncatingIfNeeded: index < edges.count ? edges[index] : random.next())
            let room = UInt32(truncatingIfNeeded: index < edges.count ? edges[edges.count - 1 - index] : random.next())
            let sequence = index < edges.count ? edges[index] : random.next() >> (random.next() % 64)
            let position = MailPosition(epoch: epoch, stream: stream, room: room, sequence: sequence)
            let text = position.description
            #expect(text.utf8.count <= MailPosition.maximumLength)
            #expect((try? MailPosition(parsing: text)) == position, "\(text)")
        }
    }

    @Test(
        "mutated, random and oversized strings are refused as malformed, or read as the one position they spell",
        arguments: [1, 2, 3] as [UInt64]
    )
    func mutations(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let alphabet = Array("0123456789abcdefABCDEF-+ x\u{0}é٣".unicodeScalars)
        var accepted = 0
        for index in 0..<inputsPerSeed {
            await cooperate(after: index, every: 500)  // long and synchronous (Tests/README.md, rule 7)
            let base = MailPosition(
                epoch: random.next(),
                stream: UInt32(truncatingIfNeeded: random.next()),
                room: UInt32(truncatingIfNeeded: random.next()),
                sequence: random.next() >> (random.next() % 64)
            ).description
            var scalars = Array(base.unicodeScalars)
            switch Int.random(in: 0..<6, using: &random) {
            case 0:  // random scalars of the right shape and wrong ones
                scalars = (0..<Int.random(in: 0...60, using: &random)).map { _ in
                    alphabet.randomElement(using: &random)!
                }
            default:  // a few edits of a real position
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let at = Int.random(in: 0...scalars.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0 where at < scalars.count: scalars.remove(at: at)
                    case 1 where at < scalars.count: scalars[at] = alphabet.randomElement(using: &random)!
                    default: scalars.insert(alphabet.randomElement(using: &random)!, at: at)
                    }
                }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            do {
                let position = try MailPosition(parsing: text)
                #expect(position.description == text, "accepted only in its own form: \(text.debugDescription)")
                accepted += 1
            } catch let error as PositionError {
                #expect(error.code == .malformed, "\(text.debugDescription): \(error)")
            }
        }
        // Some edits leave a valid position (a digit for a digit): the acceptance path is exercised too.
        #expect(accepted > 0)
    }

    @Test("boundaries: each part's length, case, sign, leading zero and overflow")
    func boundaries() throws {
        let epoch = "00000000000000ff"
        let stream = "0000abcd-12345678"  // the stream and the room
        let refused = [
            "", "-", "--", "\(epoch)-\(stream)", "\(epoch)-\(stream)-", "\(epoch)-\(stream)-00",
            "\(epoch)-0000abcd-1", "\(epoch)-0000abcd-1234567-1", "\(epoch)-0000abcd-123456789-1",
            "\(epoch)-0000abcd-1234567G-1",
            "\(epoch)-\(stream)-01", "\(epoch)-\(stream)-+1", "\(epoch)-\(stream)--1", "\(epoch)-\(stream)-1-",
            "\(epoch)-\(stream)-18446744073709551616", "\(epoch)-\(stream)-99999999999999999999",
            "\(epoch)-\(stream)-184467440737095516150", "00000000000000FF-\(stream)-1", "\(epoch)-0000ABCD-1",
            "0000000000000ff-\(stream)-1", "000000000000000ff-\(stream)-1", "\(epoch)-000abcd-1",
            "\(epoch)-00000abcd-1", " \(epoch)-\(stream)-1", "\(epoch)-\(stream)-1 ", "\(epoch)-\(stream)-1\n",
            "\(epoch)-\(stream)-１", "\(epoch)-\(stream)-1e3", String(repeating: "1", count: 1_000_000),
            String(repeating: "\(epoch)-\(stream)-1", count: 3),
        ]
        for text in refused {
            #expect(throws: PositionError.self, "\(text.prefix(60).debugDescription)") {
                try MailPosition(parsing: text)
            }
        }
        #expect((try? MailPosition(parsing: "\(epoch)-\(stream)-18446744073709551615"))?.sequence == UInt64.max)
        #expect(
            (try? MailPosition(parsing: "ffffffffffffffff-ffffffff-fffffffe-1"))
                == MailPosition(epoch: .max, stream: .max, room: .max - 1, sequence: 1)
        )
        #expect((try? MailPosition(parsing: "\(epoch)-\(stream)-7"))?.description == "\(epoch)-\(stream)-7")
        #expect((try? MailPosition(parsing: "\(epoch)-\(stream)-0"))?.sequence == 0, "0: before a room's first mail")
        #expect(try MailPosition(parsing: MailPosition.oldestKept.description) == .oldestKept)
    }

    @Test("forged positions handed to a mailroom are refused or reported, and leave it as it was")
    func forgedPositionsAtAMailroom() async throws {
        var random = SeededRandomNumberGenerator(seed: 7)
        let mailroom = Mailroom()
        await mailroom.retainHistory(Ping.self, count: 8)
        let live = try await mailroom.subscribe(to: Ping.self, after: nil)
        for id in 1...20 { await mailroom.post(Ping(id: id)) }
        let real = try await live.mail.first(20).last!.position
        var outcomes: [String: Int] = [:]
        for _ in 0..<2_000 {
            let forged = MailPosition(
                epoch: Bool.random(using: &random) ? real.epoch : random.next(),
                stream: Bool.random(using: &random) ? real.stream : UInt32(truncatingIfNeeded: random.next()),
                room: Bool.random(using: &random) ? real.room : UInt32(truncatingIfNeeded: random.next()),
                sequence: [1, 12, 13, 20, 21, UInt64.max, random.next()].randomElement(using: &random)!
            )
            do {
                let resumed = try await mailroom.subscribe(to: Ping.self, after: forged)
                outcomes[resumed.gap.map { "\($0.code)" } ?? "resumed", default: 0] += 1
            } catch let error as PositionError {
                outcomes["\(error.code)", default: 0] += 1
            }
        }
        #expect(
            Set(outcomes.keys) == [
                "resumed", "expired", "otherEpoch", "otherMailType", "severalRooms", "notYetPosted",
            ],
            "\(outcomes)"
        )
        #expect(
            await mailroom.subscriberCount(Ping.self) == 1,
            "every resumed stream was dropped; the refused never filed"
        )
        #expect(await mailroom.post(Ping(id: 21)) == Receipt(delivered: 1))
        #expect(try await live.mail.first(1).map(\.mail.id) == [21])
    }
}
