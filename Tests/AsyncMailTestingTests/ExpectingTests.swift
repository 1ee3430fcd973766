import AsyncMail
import AsyncMailTesting
import TestSupport
import Testing

struct Ping: Mail, Equatable {
    let id: Int
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

/// What an issue says.
func message(_ issue: Issue?) -> String {
    issue?.comments.map(\.rawValue).joined(separator: " ") ?? ""
}

@Suite("Expecting mail")
struct ExpectingTests {
    @Test("the expected mail is returned, including mail a task started by the action posts later")
    func countArrives() async {
        let mailroom = Mailroom()
        let arrived = await mailroom.expectMail(2, of: Ping.self) {
            await mailroom.post(Ping(id: 1))
            Task { await mailroom.post(Ping(id: 2)) }  // after the action returns
        }
        #expect(arrived == [Ping(id: 1), Ping(id: 2)])
        #expect(await mailroom.subscriberCount(for: Ping.self) == 0, "the helper's subscription has ended")
    }

    @Test("too few: one issue at the caller's line, saying what was expected and what arrived")
    func tooFew() async {
        let mailroom = Mailroom()
        var arrived: [Ping] = []
        var line = 0
        let issues = await recordedIssues {
            line = #line + 1
            arrived = await mailroom.expectMail(3, of: Ping.self, within: .milliseconds(50)) {
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

    @Test("too many: one issue that lists every mail that arrived")
    func tooMany() async {
        let mailroom = Mailroom()
        var arrived: [Ping] = []
        let issues = await recordedIssues {
            arrived = await mailroom.expectMail(1, of: Ping.self) {
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
            arrived = await mailroom.expectMail(0, of: Ping.self) { ran = true }
        }
        #expect(arrived.isEmpty)
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("expectMail needs a count of at least 1, not 0: use expectNoMail"))
        #expect(!ran)
    }

    @Test("one sender: mail from other senders neither counts nor fails the expectation")
    func oneSender() async {
        let mailroom = Mailroom()
        let lobby = await mailroom.expectMail(of: Ping.self, from: .only(RoomID(name: "lobby"))) {
            await mailroom.post(Ping(id: 1), from: RoomID(name: "kitchen"))
            await mailroom.post(Ping(id: 2), from: RoomID(name: "lobby"))
            await mailroom.post(Ping(id: 3))
        }
        #expect(lobby == [Ping(id: 2)])
    }

    @Test("a predicate: the first matching mail, the others passed over")
    func predicate() async {
        let mailroom = Mailroom()
        let found = await mailroom.expectMail(of: Ping.self) {
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
            found = await mailroom.expectMail(of: Ping.self, within: .milliseconds(50)) {
                await mailroom.post(Ping(id: 1))
            } where: {
                $0.id > 5
            }
        }
        #expect(found == nil)
        #expect(issues.count == 1)
        #expect(message(issues.first).contains("none of them did: 1 arrived: [Ping(id: 1)]"))
    }

    @Test("no mail: passes without waiting, and fails once, naming the mail, when some was posted")
    func noMail() async {
        let mailroom = Mailroom()
        await mailroom.expectNoMail(of: Ping.self, from: .only(RoomID(name: "lobby"))) {
            await mailroom.post(Ping(id: 1), from: RoomID(name: "elsewhere"))
        }
        let issues = await recordedIssues {
            await mailroom.expectNoMail(of: Ping.self, from: .only(RoomID(name: "lobby"))) {
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
            await mailroom.expectNoMail(of: Ping.self, waiting: .seconds(10)) {
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
        await observation.expectHandled()
        #expect(await screen.shown == Array(1...20))
        observation.cancel()
    }

    @Test("a handler that is stuck: one issue saying how far it got")
    func stuck() async {
        let mailroom = Mailroom()
        let screen = Screen()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
            if ping.id == 2 { for await _ in gate { break } }
            await screen.show(ping.id)
        }
        await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2), Ping(id: 3)])
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
