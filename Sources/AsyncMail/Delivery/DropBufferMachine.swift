/// The buffer of a subscription that drops mail past its backlog and tells the loss in order
/// (see ``DroppingStream``): what a post's offer, a consumer's `next()`, a finish and a cancel do
/// to it, as actions its owner carries out once no lock is held. `Waiter` is the consumer's
/// continuation; the tests use a plain value.
///
/// What the consumer is handed, in order: the replay (a resuming subscription's kept mail, which
/// no limit drops), the loss at the front (mail the `.dropOldest` policy evicted), the entries
/// (mails, and losses the `.dropNewest` policy recorded between them), then the loss at the back
/// (mail `.dropNewest` refused since the last entry). A loss is recorded where it happened and
/// merged with one already there, so there is never more than one loss between two mails, and
/// the buffer holds at most `limit` mails and `limit + 1` losses.
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
    private var frontLoss = 0
    private var entries = Ring<Delivery<Element>>()
    /// The mails among `entries`: what the limit counts.
    private var mails = 0
    private var backLoss = 0
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
            // Entries hold only mails under this policy: its losses are all at the front.
            let oldest = entries.removeFirst()
            mails -= 1
            frontLoss += 1
            append(element)
            guard case .mail(let evicted) = oldest else { preconditionFailure("a loss among .dropOldest's entries") }
            return .dropped(evicted)
        case .dropOldest, .dropNewest:
            // A limit of zero drops the new mail whichever the policy: there is no oldest.
            backLoss += 1
            return .dropped(element)
        }
    }

    private mutating func append(_ element: Element) {
        if backLoss > 0 {
            entries.append(.lost(MailLoss(code: .dropped, count: backLoss)))
            backLoss = 0
        }
        entries.append(.mail(element))
        mails += 1
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
        if frontLoss > 0 {
            defer { frontLoss = 0 }
            return .take(.lost(MailLoss(code: .dropped, count: frontLoss)))
        }
        if entries.count > 0 {
            let entry = entries.removeFirst()
            if case .mail = entry { mails -= 1 }
            return .take(entry)
        }
        if backLoss > 0 {
            defer { backLoss = 0 }
            return .take(.lost(MailLoss(code: .dropped, count: backLoss)))
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
            frontLoss = 0
            backLoss = 0
            mails = 0
            replay = []
            replayIndex = 0
        }
        return (waiter, entries.removeAll(), replay)
    }
}
