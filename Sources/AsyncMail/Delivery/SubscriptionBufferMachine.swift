/// A subscription's buffer (see ``SubscriptionBuffer``): what a post's yield, a consumer's
/// `next()`, a finish and a cancel do to it, as actions its owner carries out once no lock is
/// held. `Waiter` is the consumer's continuation; the tests use a plain value.
///
/// The policies and results are `AsyncStream`'s, which the subscribe calls take and the posts'
/// receipts count, and so is what each does: past a `.bufferingOldest(n)` limit the new mail is
/// dropped, past a `.bufferingNewest(n)` limit the oldest buffered one.
@usableFromInline
struct SubscriptionBufferMachine<Element: Sendable, Waiter: Sendable> {
    @usableFromInline typealias Policy = AsyncStream<Element>.Continuation.BufferingPolicy
    @usableFromInline typealias YieldResult = AsyncStream<Element>.Continuation.YieldResult

    /// What a post's yield comes to.
    @usableFromInline
    enum YieldAction: Sendable {
        /// The consumer was waiting: resume it with the mail.
        case resume(Waiter)
        /// Buffered, or dropped by the policy (the dropped mail is in the result: release it
        /// holding no lock), or refused once ended.
        case result(YieldResult)
    }

    /// What a consumer's `next()` comes to.
    @usableFromInline
    enum NextAction: Sendable {
        case take(Element)
        /// Nothing yet: call again with the consumer's continuation.
        case suspend
        /// Nothing yet: the continuation is stored, and a yield or an end resumes it.
        case suspended
        /// Ended and drained.
        case end
    }

    @usableFromInline let policy: Policy
    /// Made with the first mail buffered: an idle subscription holds none.
    @usableFromInline var entries: Ring<Element>?
    @usableFromInline var waiter: Waiter?
    @usableFromInline var isEnded = false

    @inlinable
    init(policy: Policy) {
        self.policy = policy
    }

    @inlinable
    mutating func yield(_ element: Element) -> YieldAction {
        if isEnded { return .result(.terminated) }
        if let waiting = waiter {
            // Waiting means everything was taken.
            waiter = nil
            return .resume(waiting)
        }
        let entries = self.entries ?? Ring()
        if self.entries == nil { self.entries = entries }
        switch policy {
        case .bufferingOldest(let limit):
            guard entries.count < limit else { return .result(.dropped(element)) }
            entries.append(element)
            return .result(.enqueued(remaining: limit - entries.count))
        case .bufferingNewest(let limit):
            guard limit > 0 else { return .result(.dropped(element)) }
            if entries.count >= limit {
                let oldest = entries.removeFirst()
                entries.append(element)
                return .result(.dropped(oldest))
            }
            entries.append(element)
            return .result(.enqueued(remaining: limit - entries.count))
        default:
            entries.append(element)
            return .result(.enqueued(remaining: .max))
        }
    }

    /// The consumer asks for the next mail; `newWaiter` is its continuation, on the second call
    /// after ``NextAction/suspend``.
    @inlinable
    mutating func next(waiter newWaiter: Waiter?) -> NextAction {
        if let entries, entries.count > 0 { return .take(entries.removeFirst()) }
        if isEnded { return .end }
        guard let newWaiter else { return .suspend }
        precondition(waiter == nil, "a subscription's stream was read from two tasks at once; iterate it from one")
        waiter = newWaiter
        return .suspended
    }

    /// Finished from outside: the consumer drains what is buffered, then ends. Returns the
    /// waiting consumer, to resume with nil, and whether this was the end (the first finish or
    /// cancel), whose termination handler runs.
    @inlinable
    mutating func finish() -> (waiter: Waiter?, ended: Bool) {
        defer { (isEnded, waiter) = (true, nil) }
        return (waiter, !isEnded)
    }

    /// The consumer went: nothing more is taken or handed out. Returns the waiting consumer, what
    /// was buffered (to release holding no lock), and whether this was the end.
    @inlinable
    mutating func cancel() -> (waiter: Waiter?, released: [Element], ended: Bool) {
        defer { (isEnded, waiter) = (true, nil) }
        return (waiter, entries?.removeAll() ?? [], !isEnded)
    }
}
