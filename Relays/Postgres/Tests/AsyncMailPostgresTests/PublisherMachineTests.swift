@_spi(AsyncMailInternal) import AsyncMail
import Foundation
@_spi(AsyncMailRelay) import RelayWire
import Testing

// Every engine's publish loop, as a value: retry and backoff for a durable store, loss counted
// for an ephemeral one, and a stop that tells the kept batch's flushes. No threads, no I/O.
@Suite("The publisher's life, every engine's")
struct PublisherMachineTests {
    private func batch(mails: Int, flush: FlushTicket? = nil) -> [OutboundQueue.Item] {
        let post = OutboundPost(
            type: "t",
            senderType: nil,
            sender: nil,
            mails: Array(repeating: Data("{}".utf8), count: mails)
        )
        return [.post(post)] + (flush.map { [.flush($0)] } ?? [])
    }

    @Test("written: the batch's flushes pass, and the next failure backs off from the first attempt")
    func written() {
        var machine = PublisherMachine(policy: .retry)
        let ticket = FlushTicket()
        machine.taken(batch(mails: 2, flush: ticket))
        #expect(machine.state == .sending(retry: false))
        let passed = machine.written()
        #expect(passed.count == 1)
        #expect(machine.state == .idle)
        machine.taken(batch(mails: 1))
        let failure = machine.failed()
        #expect(failure.backoffAttempt == 1)
    }

    @Test("durable: a failed batch is kept and written again, each failure waiting longer; nothing lost")
    func retryKeepsTheBatch() {
        var machine = PublisherMachine(policy: .retry)
        let ticket = FlushTicket()
        machine.taken(batch(mails: 3, flush: ticket))
        let first = machine.failed()
        #expect(first.mails == 3)
        #expect(first.lost == 0)
        #expect(first.passed.isEmpty, "its flush waits for the batch")
        #expect(first.backoffAttempt == 1)
        guard case .writeAgain(let again) = machine.backoffEnded(cancelled: false) else {
            Issue.record("the same batch again")
            return
        }
        #expect(again.count == 2)
        #expect(machine.state == .sending(retry: true))
        let second = machine.failed()
        #expect(second.backoffAttempt == 2)
        _ = machine.backoffEnded(cancelled: false)
        #expect(machine.written().count == 1, "the flush passes once the batch is written")
    }

    @Test("ephemeral: a failed batch is given up and counted, its flushes pass, and the next batch goes on")
    func dropCountsTheLoss() {
        var machine = PublisherMachine(policy: .drop)
        let ticket = FlushTicket()
        machine.taken(batch(mails: 4, flush: ticket))
        let failure = machine.failed()
        #expect(failure.lost == 4)
        #expect(failure.passed.count == 1)
        guard case .takeNext = machine.backoffEnded(cancelled: false) else {
            Issue.record("on to the next batch")
            return
        }
        #expect(machine.state == .idle)
        machine.taken(batch(mails: 1))
        let next = machine.failed()
        #expect(next.backoffAttempt == 2, "failures since the last write keep growing the backoff")
    }

    @Test("cancelled during a backoff: stop, telling the kept batch's flushes the relay stopped")
    func cancelledStops() {
        var machine = PublisherMachine(policy: .retry)
        let ticket = FlushTicket()
        machine.taken(batch(mails: 1, flush: ticket))
        _ = machine.failed()
        guard case .stop(let flushes) = machine.backoffEnded(cancelled: true) else {
            Issue.record("a cancelled backoff stops")
            return
        }
        #expect(flushes.count == 1)
        #expect(machine.state == .closed)
    }
}
