import Testing

@testable import AsyncMail

/// A subscription buffer's transitions, without threads.
@Suite("SubscriptionBufferMachine")
struct SubscriptionBufferMachineTests {
    typealias Machine = SubscriptionBufferMachine<Int, String>

    @Test("a waiting consumer is resumed with the mail; otherwise it is buffered and taken in order")
    func waitingThenBuffered() {
        var machine = Machine(policy: .unbounded)
        guard case .suspend = machine.next(waiter: nil), case .suspended = machine.next(waiter: "consumer") else {
            Issue.record("an empty buffer makes the consumer wait")
            return
        }
        guard case .resume("consumer") = machine.yield(1) else {
            Issue.record("the waiting consumer is resumed")
            return
        }
        for mail in 2...4 { _ = machine.yield(mail) }
        var taken: [Int] = []
        while case .take(let mail) = machine.next(waiter: nil) { taken.append(mail) }
        #expect(taken == [2, 3, 4])
    }

    @Test("bufferingOldest drops the new mail past the limit; bufferingNewest drops the oldest")
    func policies() {
        var oldest = Machine(policy: .bufferingOldest(2))
        _ = oldest.yield(1)
        _ = oldest.yield(2)
        guard case .result(.dropped(3)) = oldest.yield(3) else {
            Issue.record("the new mail is dropped")
            return
        }
        var newest = Machine(policy: .bufferingNewest(2))
        _ = newest.yield(1)
        _ = newest.yield(2)
        guard case .result(.dropped(1)) = newest.yield(3) else {
            Issue.record("the oldest mail is dropped")
            return
        }
        guard case .take(2) = newest.next(waiter: nil), case .take(3) = newest.next(waiter: nil) else {
            Issue.record("the newest two remain, in order")
            return
        }
    }

    @Test("finished, the consumer drains what is buffered, then ends; the end is told once")
    func finishDrains() {
        var machine = Machine(policy: .unbounded)
        _ = machine.yield(1)
        #expect(machine.finish().ended)
        #expect(!machine.finish().ended)
        guard case .result(.terminated) = machine.yield(2) else {
            Issue.record("an ended buffer refuses mail")
            return
        }
        guard case .take(1) = machine.next(waiter: nil), case .end = machine.next(waiter: nil) else {
            Issue.record("the buffered mail, then the end")
            return
        }
    }

    @Test("cancelled, the buffer hands out nothing more and gives back the waiter and the mail")
    func cancelReleases() {
        var machine = Machine(policy: .unbounded)
        _ = machine.yield(1)
        _ = machine.yield(2)
        let cancelled = machine.cancel()
        #expect(cancelled.released == [1, 2])
        #expect(cancelled.ended)
        guard case .end = machine.next(waiter: nil) else {
            Issue.record("nothing after a cancel")
            return
        }
        var waiting = Machine(policy: .unbounded)
        _ = waiting.next(waiter: nil)
        _ = waiting.next(waiter: "consumer")
        #expect(waiting.cancel().waiter == "consumer")
    }
}
