import Testing

@testable import AsyncMail

/// The drop-and-tell buffer's transitions, without threads: what each offer, take, finish and
/// cancel does, and the order a consumer is told things in.
@Suite("DropBufferMachine: drop past the backlog, tell the loss in order")
struct DropBufferMachineTests {
    typealias Machine = DropBufferMachine<Int, String>

    /// Takes everything the consumer would be handed now, in order: mails as numbers, losses as
    /// negative counts.
    private func drain(_ machine: inout Machine) -> [Int] {
        var taken: [Int] = []
        while case .take(let delivery) = machine.next(waiter: nil) {
            switch delivery {
            case .mail(let mail): taken.append(mail)
            case .lost(let loss): taken.append(-loss.count)
            }
        }
        return taken
    }

    private func offerAll(_ mails: ClosedRange<Int>, to machine: inout Machine) -> (enqueued: Int, dropped: [Int]) {
        var (enqueued, dropped) = (0, [Int]())
        for mail in mails {
            switch machine.offer(mail) {
            case .enqueued: enqueued += 1
            case .dropped(let lost): dropped.append(lost)
            case .resume, .terminated: Issue.record("no consumer waits and the buffer is open")
            }
        }
        return (enqueued, dropped)
    }

    @Test("dropping the oldest: the loss stands before the newest mails it made room for")
    func dropOldest() {
        var machine = Machine(limit: 3, policy: .dropOldest)
        let offered = offerAll(1...7, to: &machine)
        #expect(offered.enqueued == 3)
        #expect(offered.dropped == [1, 2, 3, 4], "each eviction hands the evicted mail out, to release unlocked")
        #expect(drain(&machine) == [-4, 5, 6, 7])
    }

    @Test("dropping the newest: the buffered mails, then the loss, then what came after room was made")
    func dropNewest() {
        var machine = Machine(limit: 2, policy: .dropNewest)
        #expect(offerAll(1...5, to: &machine).dropped == [3, 4, 5])
        guard case .take(.mail(1)) = machine.next(waiter: nil) else {
            Issue.record("mail 1 first")
            return
        }
        #expect(offerAll(6...7, to: &machine).dropped == [7], "one slot was free")
        #expect(drain(&machine) == [2, -3, 6, -1])
    }

    @Test("a loss told after the mail before it, without waiting for the mail after it")
    func lossAtTheBackIsToldAtOnce() {
        var machine = Machine(limit: 1, policy: .dropNewest)
        _ = offerAll(1...3, to: &machine)
        #expect(drain(&machine) == [1, -2])
        guard case .suspend = machine.next(waiter: nil) else {
            Issue.record("nothing more to tell")
            return
        }
    }

    @Test("a limit of zero: mail reaches a waiting consumer, and every other mail is a loss, either policy")
    func limitZero() {
        for policy in [Machine.Policy.dropOldest, .dropNewest] {
            var machine = Machine(limit: 0, policy: policy)
            guard case .suspended = machine.next(waiter: "consumer") else {
                Issue.record("it waits")
                return
            }
            guard case .resume("consumer", .mail(1)) = machine.offer(1) else {
                Issue.record("handed over")
                return
            }
            #expect(offerAll(2...4, to: &machine).dropped == [2, 3, 4])
            #expect(drain(&machine) == [-3])
        }
    }

    @Test("losses in a row merge; mails and losses alternate at most")
    func lossesMerge() {
        var machine = Machine(limit: 1, policy: .dropNewest)
        _ = offerAll(1...4, to: &machine)  // 1 kept, 2…4 lost
        #expect(drain(&machine) == [1, -3])
        _ = offerAll(5...6, to: &machine)  // 5 kept, 6 lost
        #expect(drain(&machine) == [5, -1])
    }

    @Test("the replay comes first and no limit drops it; live mail after it keeps the limit")
    func replayAheadOfLive() {
        var machine = Machine(limit: 1, policy: .dropOldest)
        machine.setReplay([10, 11, 12])
        _ = offerAll(1...3, to: &machine)
        #expect(machine.buffered == 4)
        #expect(drain(&machine) == [10, 11, 12, -2, 3])
    }

    @Test("finished from outside: what is buffered is still handed out, then the end")
    func finishDrains() {
        var machine = Machine(limit: 2, policy: .dropNewest)
        _ = offerAll(1...3, to: &machine)
        #expect(machine.finish() == nil, "nobody waited")
        guard case .terminated(4) = machine.offer(4) else {
            Issue.record("an ended buffer takes nothing")
            return
        }
        #expect(drain(&machine) == [1, 2, -1])
        guard case .end = machine.next(waiter: nil) else {
            Issue.record("then the end")
            return
        }
    }

    @Test("a waiting consumer is resumed by the finish, with nothing")
    func finishResumesTheWaiter() {
        var machine = Machine(limit: 2, policy: .dropOldest)
        guard case .suspended = machine.next(waiter: "consumer") else {
            Issue.record("it waits")
            return
        }
        #expect(machine.finish() == "consumer")
    }

    @Test("cancelled: everything buffered is handed out to release, and nothing is told")
    func cancelReleases() {
        var machine = Machine(limit: 2, policy: .dropNewest)
        machine.setReplay([9])
        _ = offerAll(1...3, to: &machine)
        let cancelled = machine.cancel()
        #expect(cancelled.waiter == nil)
        #expect(cancelled.released.compactMap(\.mail) == [1, 2])
        #expect(cancelled.replay == [9])
        guard case .end = machine.next(waiter: nil) else {
            Issue.record("ended, and empty")
            return
        }
    }

    @Test("a loss told from outside stands before the next mail, merged by code, and wakes a waiting consumer")
    func toldLosses() {
        var machine = Machine(limit: 2, policy: .dropOldest)
        let missed = MailLoss(code: .missed, count: 2)
        #expect(machine.tell(missed) == nil)
        #expect(machine.tell(MailLoss(code: .missed, count: 1)) == nil, "merged with the one before")
        _ = offerAll(1...1, to: &machine)
        var told: [MailLoss] = []
        while case .take(let delivery) = machine.next(waiter: nil) { if let loss = delivery.loss { told.append(loss) } }
        #expect(told == [MailLoss(code: .missed, count: 3)])
        guard case .suspended = machine.next(waiter: "consumer") else {
            Issue.record("it waits")
            return
        }
        #expect(machine.tell(missed) == "consumer", "resumed with the loss at once")
        #expect(machine.tell(MailLoss(code: .missed, count: 0)) == nil, "an empty loss is nothing")
    }

    @Test("dropping the oldest past a told loss: the loss moves to the front with the evicted mail's, each of its code")
    func evictionPastAToldLoss() {
        var machine = Machine(limit: 2, policy: .dropOldest)
        _ = offerAll(1...1, to: &machine)
        _ = machine.tell(MailLoss(code: .missed, count: 4))
        _ = offerAll(2...5, to: &machine)  // 1, the loss, 2 and 3 make way for 4 and 5
        var taken: [String] = []
        while case .take(let delivery) = machine.next(waiter: nil) {
            switch delivery {
            case .mail(let mail): taken.append("\(mail)")
            case .lost(let loss): taken.append("\(loss.code) \(loss.count)")
            }
        }
        #expect(taken == ["dropped 3", "missed 4", "4", "5"])
    }
}
