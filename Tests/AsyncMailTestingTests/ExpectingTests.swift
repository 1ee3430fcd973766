import AsyncMailTesting
import Dispatch
import Synchronization
import TestSupport
import Testing

@testable import AsyncMail

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct Ping: Mail, Equatable {
    let id: Int
}

struct Score: Mail, Equatable {
    let points: Int
}

final class Player: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

struct RoomID: Hashable, Sendable {
    let name: String
}

/// The issues recorded inside `body`, which must all be known: a way to prove that a failing
/// helper records exactly one issue, at the caller's line, saying what happened.
func recordedIssues(_ body: () async -> Void) async -> [Issue] {
    let issues = Locked<[Issue]>([])
    await withKnownIssue {
        await body()
    } matching: { issue in
        issues.withLock { $0.append(issue) }
        return true
    }
    return issues.withLock { $0 }
}

/// Holds the thread that waits on it until opened: a task kept from going on, as a starved
/// thread pool would keep it.
final class HoldingGate: Sendable {
    private let opened = DispatchSemaphore(value: 0)

    /// Blocks until opened, or until `limit` has passed; open from then on.
    ///
    /// The thread it holds is one of the pool's two on 2 cores, so every test beside it runs on
    /// one thread meanwhile, and the task that opens the gate waits its turn on that one. At the
    /// start of a run under ThreadSanitizer, with every suite starting at once, the one test that
    /// uses it took 8 to 27 s in four runs, holding the thread until its end, and in the 27 s run
    /// 13 tests beside it failed at their 20 s limits (Tests/README.md, rule 7). The limit
    /// ends that; on an idle machine the gate opens first. It blocks rather than spins, so the
    /// core goes to the threads that can run: spinning, it took 17% of the samples there.
    func wait(atMost limit: Duration = .seconds(2)) {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        _ = opened.wait(timeout: .now() + .nanoseconds(nanoseconds))
        opened.signal()  // open for every later wait
    }

    func open() { opened.signal() }
}

/// What an issue says.
func message(_ issue: Issue?) -> String {
    issue?.comments.map(\.rawValue).joined(separator: " ") ?? ""
}

@Suite("Expecting mail")
struct ExpectingTests {
    @Test("the expected mail is returned, including mail a task started by the action posts later")
    func countArrives() async {
        let mailroom = Mailroom()
        let arrived = await mailroom.expectMail(Ping.self, count: 2) {
            await mailroom.post(Ping(id: 1))
            Task { await mailroom.post(Ping(id: 2)) }  // after the action returns
        }
        #expect(arrived == [Ping(id: 1), Ping(id: 2)])
        #expect(await mailroom.subscriberCount(Ping.self) == 0, "the helper's subscription has ended")
    }

    @Test("too few: one issue at the caller's line, saying what was expected and what arrived")
    func tooFew() async {
        let mailroom = Mailroom()
        var arrived: [Ping] = []
        var line = 0
        let issues = await recordedIssues {
            line = #line + 1
            arrived = await mailroom.expectMail(Ping.self, count: 3, within: .milliseconds(50)) {
                await mailroom.post(Ping(id: 7))
            }
        }
        #expect(arrived == [Ping(id: 7)])
        #expect(issues.count == 1)
        #expect(issues.first?.sourceLocation?.line == line)
        #expect(issues.first?.sourceLocation?.fileID == #fileID)
        #expect(
            message(issues.first).contains(
                "expected 3 Ping from everyone within 0.05 seconds; 1 arrived: [Ping(id: 7)]"
            )
        )
    }

    @Test("pinned to one sender and nothing came: the issue lists the mail of that type other senders posted")
    func otherSendersAreTheClue() async {
        let mailroom = Mailroom()
        let issues = await recordedIssues {
            await mailroom.expectMail(Ping.self, from: .only(RoomID(name: "salad")), within: .milliseconds(50)) {
                await mailroom.post(Ping(id: 3), from: RoomID(name: "grill"))
                await mailroom.post(Ping(id: 4))
            }
        }
        #expect(issues.count == 1)
        #expect(
            message(issues.first).contains(
                #"expected 1 Ping from only RoomID(name: "salad") within 0.05 seconds; 0 arrived; "#
                    + #"every Ping posted meanwhile (2, 2 of them from other senders): "#
                    + #"Ping(id: 3) from RoomID(name: "grill"), Ping(id: 4) from no sender"#
            )
        )
        // The tap that watched is not counted, and is gone with the expectation.
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
        #expect(await mailroom.tapCount == 0)
    }

    @Test("a predicate on one sender's mail: 'one Ping', and the other senders' mail")
    func predicateWithOtherSenders() async {
        let mailroom = Mailroom()
        let issues = await recordedIssues {
            await mailroom.expectMail(Ping.self, from: .only(RoomID(name: "salad")), within: .milliseconds(50)) {
                await mailroom.post(Ping(id: 1), from: RoomID(name: "salad"))
                await mailroom.post(Ping(id: 9), from: RoomID(name: "grill"))
            } where: {
                $0.id > 5
            }
        }
        #expect(message(issues.first).contains("expected one Ping from only"))
        #expect(message(issues.first).contains("(2, 1 of them from other senders)"))
    }

    @Test("fromAny: the mail from any sender of a type, as the documentation shows")
    func fromAnySenderOfAType() async {
        let mailroom = Mailroom()
        let scored = await mailroom.expectMail(Score.self, fromAny: Player.self) {
            await mailroom.post(Score(points: 3), from: Player(name: "ada"))
        }
        #expect(scored.map(\.points) == [3])
        await mailroom.expectNoMail(Score.self, fromAny: Player.self) {
            await mailroom.post(Score(points: 1))  // no sender: no player's score
        }
    }

    @Test("fromAny falling short: the issue names the sender type and lists what others posted")
    func fromAnyFallsShort() async {
        let mailroom = Mailroom()
        let issues = await recordedIssues {
            await mailroom.expectMail(Score.self, fromAny: Player.self, within: .milliseconds(50)) {
                await mailroom.post(Score(points: 1), from: RoomID(name: "lobby"))
            }
            await mailroom.expectNoMail(Score.self, fromAny: Player.self) {
                await mailroom.post(Score(points: 2), from: Player(name: "bo"))
            }
        }
        #expect(issues.count == 2)
        #expect(message(issues.first).contains("expected 1 Score from any Player within 0.05 seconds; 0 arrived; "))
        #expect(message(issues.first).contains(#"Score(points: 1) from RoomID(name: "lobby")"#))
        #expect(message(issues.last).contains("expected no Score from any Player; 1 arrived: [Score(points: 2)]"))
        #expect(await mailroom.tapCount == 0)
    }

    @Test("too many: one issue that lists every mail that arrived")
    func tooMany() async {
        let mailroom = Mailroom()
        var arrived: [Ping] = []
        let issues = await recordedIssues {
            arrived = await mailroom.expectMail(Ping.self, count: 1) {
                await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)])
            }
        }
        #expect(arrived == [Ping(id: 1), Ping(id: 2)])
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("expected exactly 1 Ping from everyone; 2 arrived"))
    }

    @Test("a count below one is an issue at once, not an expectation that passes whatever happens")
    func countBelowOne() async {
        let mailroom = Mailroom()
        var ran = false
        var arrived: [Ping] = [Ping(id: -1)]
        let issues = await recordedIssues {
            arrived = await mailroom.expectMail(Ping.self, count: 0) { ran = true }
        }
        #expect(arrived.isEmpty)
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("expectMail needs a count of at least 1, not 0: use expectNoMail"))
        #expect(!ran)
    }

    @Test("one sender: mail from other senders neither counts nor fails the expectation")
    func oneSender() async {
        let mailroom = Mailroom()
        let lobby = await mailroom.expectMail(Ping.self, from: .only(RoomID(name: "lobby"))) {
            await mailroom.post(Ping(id: 1), from: RoomID(name: "kitchen"))
            await mailroom.post(Ping(id: 2), from: RoomID(name: "lobby"))
            await mailroom.post(Ping(id: 3))
        }
        #expect(lobby == [Ping(id: 2)])
    }

    @Test("a predicate: the first matching mail, the others passed over")
    func predicate() async {
        let mailroom = Mailroom()
        let found = await mailroom.expectMail(Ping.self) {
            await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])
        } where: {
            $0.id > 1
        }
        #expect(found == Ping(id: 2))
    }

    @Test("a predicate nothing matches: one issue naming what did arrive, and nil")
    func predicateUnmatched() async {
        let mailroom = Mailroom()
        var found: Ping?
        let issues = await recordedIssues {
            found = await mailroom.expectMail(Ping.self, within: .milliseconds(50)) {
                await mailroom.post(Ping(id: 1))
            } where: {
                $0.id > 5
            }
        }
        #expect(found == nil)
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("none of them did: 1 arrived: [Ping(id: 1)]"))
    }

    @Test("a failing helper reports every mail posted to it, even mail its reading task never got to")
    func reportsWhatWasPosted() async {
        let mailroom = Mailroom()
        // A predicate stuck on the first mail (for 2 s at most) keeps the helper's reading task from
        // the second, as a starved thread pool would on a busy machine.
        let stuck = HoldingGate()
        var found: Ping? = Ping(id: 0)
        let issues = await recordedIssues {
            found = await mailroom.expectMail(Ping.self, within: .milliseconds(100)) {
                await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)])
            } where: { _ in
                stuck.wait()
                return false
            }
        }
        stuck.open()
        #expect(found == nil)
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("none of them did: 2 arrived: [Ping(id: 1), Ping(id: 2)]"))
    }

    @Test("no mail: passes without waiting, and fails once, naming the mail, when some was posted")
    func noMail() async {
        let mailroom = Mailroom()
        await mailroom.expectNoMail(Ping.self, from: .only(RoomID(name: "lobby"))) {
            await mailroom.post(Ping(id: 1), from: RoomID(name: "elsewhere"))
        }
        let issues = await recordedIssues {
            await mailroom.expectNoMail(Ping.self, from: .only(RoomID(name: "lobby"))) {
                await mailroom.post(Ping(id: 9), from: RoomID(name: "lobby"))
            }
        }
        #expect(issues.count == 1)
        #expect(
            message(issues.first).contains(
                #"expected no Ping from only RoomID(name: "lobby"); 1 arrived: [Ping(id: 9)]"#
            )
        )
    }

    @Test("no mail within a window: mail a started task posts inside it is caught")
    func noMailWindow() async {
        let mailroom = Mailroom()
        let issues = await recordedIssues {
            await mailroom.expectNoMail(Ping.self, waiting: .seconds(10)) {
                Task { await mailroom.post(Ping(id: 4)) }
            }
        }
        #expect(issues.count == 1, "and it returned at the mail, not at the end of the window")
    }
}

/// Records what an observation's handler has done.
actor Screen {
    private(set) var shown: [Int] = []
    func show(_ id: Int) { shown.append(id) }
}

@Suite("Expecting an observation to catch up")
struct ObservationExpectingTests {
    @Test("expectHandled returns once the handler has run for everything posted")
    func handled() async {
        let mailroom = Mailroom()
        let screen = Screen()
        let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
            await Task.yield()  // a handler that takes a while
            await screen.show(ping.id)
        }
        await mailroom.post(contentsOf: (1...20).map(Ping.init(id:)))
        // A hang guard: twenty calls that each yield take seconds on a loaded machine under TSan.
        await observation.expectHandled(within: .seconds(60))
        #expect(await screen.shown == Array(1...20))
        observation.cancel()
    }

    @Test("a handler that is stuck: one issue saying how far it got")
    func stuck() async {
        let mailroom = Mailroom()
        let screen = Screen()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let (stuck, reportStuck) = AsyncStream.makeStream(of: Void.self)
        let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
            if ping.id == 2 {
                reportStuck.yield()
                for await _ in gate { break }
            }
            await screen.show(ping.id)
        }
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])
        // Stuck at mail 2, mail 1 handled: what the issue must say, however slowly the handler got there.
        _ = try? await stuck.first(1)
        let issues = await recordedIssues {
            await observation.expectHandled(within: .milliseconds(100))
        }
        #expect(issues.count == 1)
        #expect(
            message(issues.first).contains("handle the 3 mails posted to it within 0.1 seconds; it handled 1")
        )
        open.yield()
        await observation.expectHandled()
        #expect(await screen.shown == [1, 2, 3])
        observation.cancel()
    }
}

/// Thrown by a condition, to show that `waitUntil` rethrows it.
struct ConditionFailed: Error {}

@Suite("Waiting for a state nothing announces")
struct WaitUntilTests {
    @Test("returns once the condition holds, when another task makes it true after a first check")
    func holds() async throws {
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let (done, checks) = (Locked(false), Locked(0))
        Task {
            for await _ in gate { break }
            done.withLock { $0 = true }
        }
        try await waitUntil("the task has run") {
            let isDone = done.withLock { $0 }
            checks.withLock { $0 += 1 }
            open.yield()  // read first: the first check finds it false, then lets the task go
            return isDone
        }
        #expect(done.withLock { $0 })
        #expect(checks.withLock { $0 } >= 2, "it checked again after finding the condition false")
    }

    @Test("never true: one issue at the caller's line, quoting the comment, and TimedOut")
    func neverHolds() async {
        var line = 0
        var thrown: (any Error)?
        let issues = await recordedIssues {
            do {
                line = #line + 1
                try await waitUntil("the answer arrives", within: .milliseconds(50)) { false }
            } catch {
                thrown = error
            }
        }
        #expect(issues.count == 1)
        #expect(issues.first?.sourceLocation?.line == line)
        #expect(message(issues.first) == #""the answer arrives" did not hold within 0.05 seconds"#)
        #expect((thrown as? TimedOut)?.limit == .milliseconds(50))
    }

    @Test("an error the condition throws ends the wait and is rethrown, with no issue of its own")
    func conditionError() async {
        let checks = Locked(0)
        await #expect(throws: ConditionFailed.self) {
            try await waitUntil {
                checks.withLock { $0 += 1 }
                throw ConditionFailed()
            }
        }
        #expect(checks.withLock { $0 } == 1)
    }
}
