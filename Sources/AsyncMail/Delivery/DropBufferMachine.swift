/// The buffer of a subscription that drops mail past its backlog and tells the loss in order
/// (see ``DroppingStream``): what a post's offer, a consumer's `next()`, a finish and a cancel do
/// to it, as actions its owner carries out once no lock is held. `Waiter` is the consumer's
/// continuation; the tests use a plain value.
///
/// What the consumer is handed, in order: the replay (a resuming subscription's kept mail, which
/// no limit drops), the losses at the front (mail the `.dropOldest` policy evicted, and losses
/// that stood between evicted mails), the entries (mails, and losses recorded between them), then
/// the losses at the back (mail `.dropNewest` refused, and losses told, since the last entry). A
/// loss is recorded where it happened and merged with one of its code already there, so between
/// two mails there is at most one loss of each code, and the buffer holds at most `limit` mails.
@usableFromInline
struct DropBufferMachine<Element: Sendable, Waiter: Sendable> {
    /// Which mail a full buffer gives up.
    @usableFromInline
    enum Policy: Sendable {
        /// The oldest buffered mail, to make room for the new one.
        case dropOldest
        /// The new mail.
        case dropNewest
    }

    /// What a post's offer comes to.
    @usableFromInline
    enum OfferAction: Sendable {
        /// The consumer was waiting: resume it with this.
        case resume(Waiter, Delivery<Element>)
        /// Buffered.
        case enqueued
        /// The buffer was full: this mail (the new one, or the oldest buffered) is lost and
        /// counted; release it holding no lock.
        case dropped(Element)
        /// The subscription has ended: the mail is not taken.
        case terminated(Element)
    }

    /// What a consumer's `next()` comes to.
    @usableFromInline
    enum NextAction: Sendable {
        case take(Delivery<Element>)
        /// Nothing yet: call again with the consumer's continuation.
        case suspend
        /// Nothing yet: the continuation is stored, and an offer or an end resumes it.
        case suspended
        /// Finished and drained.
        case end
    }

    @usableFromInline let limit: Int
    @usableFromInline let policy: Policy
    private var replay: [Element] = []
    private var replayIndex = 0
    /// Losses before the first entry, merged by code, in the order they are told.
    private var frontLosses: [MailLoss] = []
    private var entries = Ring<Delivery<Element>>()
    /// The mails among `entries`: what the limit counts.
    private var mails = 0
    /// Losses after the last entry, merged by code, in the order they are told.
    private var backLosses: [MailLoss] = []
    private var waiter: Waiter?
    private var isFinished = false

    @usableFromInline
    init(limit: Int, policy: Policy) {
        self.limit = max(limit, 0)
        self.policy = policy
    }

    /// Mail the consumer has not taken yet, replay included; for tests.
    var buffered: Int { replay.count - replayIndex + mails }

    /// Puts a resuming subscription's kept mail ahead of everything, apart from the limit; before
    /// the consumer has taken anything.
    @usableFromInline
    mutating func setReplay(_ kept: [Element]) {
        guard !isFinished else { return }
        replay = kept
        replayIndex = 0
    }

    /// A post offers a mail.
    @usableFromInline
    mutating func offer(_ element: Element) -> OfferAction {
        if isFinished { return .terminated(element) }
        if let waiting = waiter {
            // Waiting means everything was taken: nothing is buffered, no loss is untold.
            waiter = nil
            return .resume(waiting, .mail(element))
        }
        if mails < limit {
            append(element)
            return .enqueued
        }
        switch policy {
        case .dropOldest where mails > 0:
            // The losses before the oldest mail stand next to its own once it is gone.
            while true {
                switch entries.removeFirst() {
                case .lost(let loss):
                    Self.merge(loss, into: &frontLosses)
                case .mail(let evicted):
                    mails -= 1
                    Self.merge(MailLoss(code: .dropped, count: 1), into: &frontLosses)
                    append(element)
                    return .dropped(evicted)
                }
            }
        case .dropOldest, .dropNewest:
            // A limit of zero drops the new mail whichever the policy: there is no oldest.
            Self.merge(MailLoss(code: .dropped, count: 1), into: &backLosses)
            return .dropped(element)
        }
    }

    /// Mail was lost before the next mail offered, and not here (a relay's room missed it): told
    /// in order, at once to a waiting consumer. Returns the waiting consumer, to resume with it.
    @usableFromInline
    mutating func tell(_ loss: MailLoss) -> Waiter? {
        guard !isFinished, loss.count > 0 else { return nil }
        if let waiting = waiter {
            waiter = nil
            return waiting
        }
        Self.merge(loss, into: &backLosses)
        return nil
    }

    private mutating func append(_ element: Element) {
        for loss in backLosses { entries.append(.lost(loss)) }
        backLosses = []
        entries.append(.mail(element))
        mails += 1
    }

    private static func merge(_ loss: MailLoss, into losses: inout [MailLoss]) {
        if let index = losses.firstIndex(where: { $0.code == loss.code }) {
            losses[index] = MailLoss(code: loss.code, count: losses[index].count + loss.count)
        } else {
            losses.append(loss)
        }
    }

    /// The consumer asks for the next element; `waiter` is its continuation, on the second call
    /// after ``NextAction/suspend``.
    @usableFromInline
    mutating func next(waiter newWaiter: Waiter?) -> NextAction {
        if replayIndex < replay.count {
            let kept = replay[replayIndex]
            replayIndex += 1
            if replayIndex == replay.count { (replay, replayIndex) = ([], 0) }
            return .take(.mail(kept))
        }
        if !frontLosses.isEmpty {
            return .take(.lost(frontLosses.removeFirst()))
        }
        if entries.count > 0 {
            let entry = entries.removeFirst()
            if case .mail = entry { mails -= 1 }
            return .take(entry)
        }
        if !backLosses.isEmpty {
            return .take(.lost(backLosses.removeFirst()))
        }
        if isFinished { return .end }
        guard let newWaiter else { return .suspend }
        precondition(waiter == nil, "a subscription's stream was read from two tasks at once; iterate it from one")
        waiter = newWaiter
        return .suspended
    }

    /// The subscription ended from outside (`close()`, a departed sender): the consumer drains
    /// what is buffered, then gets nil. Returns the waiting consumer, to resume with nil.
    @usableFromInline
    mutating func finish() -> Waiter? {
        isFinished = true
        defer { waiter = nil }
        return waiter
    }

    /// The consumer went (cancelled, or the stream dropped): nothing more is taken or handed out.
    /// Returns the waiting consumer, to resume with nil, and what was buffered, to release
    /// holding no lock.
    @usableFromInline
    mutating func cancel() -> (waiter: Waiter?, released: [Delivery<Element>], replay: [Element]) {
        isFinished = true
        defer {
            waiter = nil
            frontLosses = []
            backLosses = []
            mails = 0
            replay = []
            replayIndex = 0
        }
        return (waiter, entries.removeAll(), replay)
    }
}
