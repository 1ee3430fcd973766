import AsyncMail
@_spi(AsyncMailRelay) import RelayWire
import Testing

// The gate's transitions as values (no threads, no I/O), then the class's waiting posts, each
// resumed by the event that frees room.
@Suite("The relay's entry: a bound on what it holds, and posts that wait for room")
struct TapGateTests {
    /// A machine, open, with a limit of `limit` mails.
    private func machine(limit: Int) -> TapGateMachine {
        var machine = TapGateMachine(limit: limit)
        machine.open()
        return machine
    }

    @Test("a post starts while the relay holds fewer mails than its limit, and is admitted whole")
    func admitsWholePosts() {
        var gate = machine(limit: 2)
        let step1 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(step1)
        // A post of three starts at one held: all three go in, past the limit.
        let step2 = gate.admit(endingPost: false, routed: false, reservation: false)
        #expect(step2)
        let step3 = gate.admit(endingPost: false, routed: false, reservation: false)
        #expect(step3)
        let step4 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(step4)
        #expect(gate.held == 4)
        let step5 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!step5, "held 4 of 2: refused")
        #expect(gate.lost == 1)
    }

    @Test("what it holds counts the queue until the publisher takes it, not only what waits to be forwarded")
    func holdsUntilTaken() {
        var gate = machine(limit: 2)
        _ = gate.admit(endingPost: true, routed: false, reservation: false)
        _ = gate.admit(endingPost: true, routed: false, reservation: false)
        gate.enqueued(1)
        _ = gate.forwardedOne()
        gate.enqueued(1)
        _ = gate.forwardedOne()
        #expect(gate.held == 2, "forwarded into the queue: still held")
        let step6 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!step6)
        _ = gate.taken(2)
        #expect(gate.held == 0)
        let step7 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(step7)
    }

    @Test("posts that wait are granted room first come, first served, as the publisher takes what is queued")
    func waitersInOrder() {
        var gate = machine(limit: 1)
        let step8 = gate.reserve()
        #expect(step8 == .reserved)
        let step9 = gate.admit(endingPost: true, routed: false, reservation: true)
        #expect(step9)
        #expect(gate.reserved == 0)
        guard case .wait(let first) = gate.reserve(), case .wait(let second) = gate.reserve() else {
            Issue.record("a full gate makes posts wait")
            return
        }
        // A synchronous post cannot wait, and cannot take the room the first waiter is owed.
        gate.enqueued(1)
        _ = gate.forwardedOne()
        let step10 = gate.taken(1)
        #expect(step10 == [first])
        let step11 = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!step11, "the room is reserved")
        let step12 = gate.admit(endingPost: true, routed: false, reservation: true)
        #expect(step12, "the first waiter posts")
        gate.enqueued(1)
        let progress = gate.forwardedOne()
        #expect(progress.granted.isEmpty, "still held in the queue")
        let step13 = gate.taken(1)
        #expect(step13 == [second])
    }

    @Test("a waiter that gives up leaves the line; a reservation not spent goes back to the next in line")
    func withdrawAndRelease() {
        var gate = machine(limit: 1)
        let step14 = gate.reserve()
        #expect(step14 == .reserved)
        guard case .wait(let first) = gate.reserve(), case .wait(let second) = gate.reserve() else {
            Issue.record("a full gate makes posts wait")
            return
        }
        let step15 = gate.withdraw(first)
        #expect(step15 == (true, []))
        let step16 = gate.withdraw(first)
        #expect(step16 == (false, []), "once")
        let step17 = gate.release()
        #expect(step17 == [second], "the unspent room goes to the next in line")
        #expect(gate.reserved == 1)
    }

    @Test("a graceful shutdown or a stop lets every waiting post go on, and takes no new reservation")
    func shutdownReleases() {
        var gate = machine(limit: 1)
        _ = gate.admit(endingPost: true, routed: false, reservation: false)
        guard case .wait(let waiter) = gate.reserve() else {
            Issue.record("a full gate makes posts wait")
            return
        }
        let (isDone, released) = gate.beginShutdown()
        #expect(!isDone)
        #expect(released == [waiter])
        let step18 = gate.reserve()
        #expect(step18 == .notRunning)
        let step19 = gate.close().released.isEmpty
        #expect(step19)
        var closed = machine(limit: 1)
        _ = closed.admit(endingPost: true, routed: false, reservation: false)
        guard case .wait(let other) = closed.reserve() else {
            Issue.record("a full gate makes posts wait")
            return
        }
        let step20 = closed.close().released
        #expect(step20 == [other])
        let step21 = closed.reserve()
        #expect(step21 == .notRunning)
    }

    @Test("a refusal wakes the forwarding loop once, until it takes the refusals to report them")
    func refusalWakesOnce() {
        var gate = machine(limit: 1)
        let first = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(first)
        let wakeBefore = gate.needsWakeForRefusals()
        #expect(!wakeBefore, "nothing refused")
        let refused = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!refused)
        let wake = gate.needsWakeForRefusals()
        #expect(wake)
        let again = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!again)
        let wakeAgain = gate.needsWakeForRefusals()
        #expect(!wakeAgain, "already woken")
        let taken = gate.takeRefusedPosts()
        #expect(taken == 2)
        let third = gate.admit(endingPost: true, routed: false, reservation: false)
        #expect(!third)
        let wakeThird = gate.needsWakeForRefusals()
        #expect(wakeThird, "taken: the next refusal wakes it again")
    }

    @Test("a routed post spends its reservation even when a shutdown refuses it")
    func routedSpends() {
        var gate = machine(limit: 4)
        let step22 = gate.reserve()
        #expect(step22 == .reserved)
        _ = gate.beginShutdown()
        let step23 = gate.admit(endingPost: true, routed: true, reservation: true)
        #expect(!step23)
        #expect(gate.reserved == 0)
    }

    @Test("a waiting post resumes when the publisher takes what is queued, and holds the room it was granted")
    func waitingPostResumes() async throws {
        let gate = TapGate(backlogLimit: 1)
        gate.open()
        let step24 = gate.admit(endingPost: true)
        #expect(step24)
        gate.enqueued(1)
        _ = gate.forwardedOne()
        let waiting = Task { await gate.reserve(waitingAtMost: .seconds(600)) != nil }
        while gate.machine.waiting.isEmpty { await Task.yield() }
        gate.taken(1)
        #expect(await waiting.value, "granted room")
        #expect(gate.machine.reserved == 1)
    }

    @Test("a waiting post gives up at its deadline, or when its task is cancelled, and holds nothing")
    func waitingPostGivesUp() async throws {
        let gate = TapGate(backlogLimit: 1)
        gate.open()
        let step25 = gate.admit(endingPost: true)
        #expect(step25)
        #expect(await gate.reserve(waitingAtMost: .milliseconds(20)) == nil, "the deadline")
        let cancelled = Task { await gate.reserve(waitingAtMost: .seconds(600)) == nil }
        while gate.machine.waiting.isEmpty { await Task.yield() }
        cancelled.cancel()
        #expect(await cancelled.value)
        #expect(gate.machine.waiting.isEmpty)
        #expect(gate.machine.reserved == 0)
    }

    @Test("a reservation bound to the posting task is spent by the tap filter once, and an unspent one goes back")
    func reservationSpentOnce() async throws {
        let gate = TapGate(backlogLimit: 1)
        gate.open()
        let reservation = try #require(await gate.reserve(waitingAtMost: .seconds(600)))
        let step26 = gate.admit(endingPost: true)
        #expect(!step26, "without the reservation: the room is owed")
        TapGate.$reservations.withValue([reservation]) {
            let step27 = gate.admit(endingPost: true)
            #expect(step27, "with it")
            let step28 = gate.admit(endingPost: true)
            #expect(!step28, "spent")
        }
        gate.settle(reservation)
        #expect(gate.machine.reserved == 0, "spent: settling gives nothing back")

        let other = TapGate(backlogLimit: 1)
        other.open()
        let unspent = try #require(await other.reserve(waitingAtMost: .zero))
        #expect(other.machine.reserved == 1)
        other.settle(unspent)
        #expect(other.machine.reserved == 0, "unspent: given back")
        #expect(other.admit(endingPost: true))
    }
}
