/// A subscription's buffer that drops mail past its backlog and tells each loss in order (see
/// ``DropBufferMachine``, which decides everything): posts offer mail to it in place of the
/// stream's continuation, and a ``DroppingStream``'s consumer takes from it.
///
/// Its lock is the subscription's own: only the posts that reach this subscription and its one
/// consumer take it, briefly, and nothing runs under it but the machine. What the machine gives
/// up (a dropped mail, a cancelled buffer) is released, and a waiting consumer resumed, after
/// unlocking.
@usableFromInline
final class DropBuffer<Element: Sendable>: Sendable {
    @usableFromInline typealias Waiter = UnsafeContinuation<Delivery<Element>?, Never>
    @usableFromInline typealias Machine = DropBufferMachine<Element, Waiter>

    /// What an offer came to, as a post's ``Receipt`` counts it.
    @usableFromInline
    enum Outcome: Sendable {
        case enqueued, dropped, terminated
    }

    @usableFromInline let _machine: Locked<Machine>

    @usableFromInline
    init(limit: Int, policy: Machine.Policy) {
        _machine = Locked(Machine(limit: limit, policy: policy))
    }

    /// The most mail it buffers for a consumer that is behind.
    var limit: Int { _machine.withLock { $0.limit } }

    /// Offers a posted mail.
    @inlinable
    func offer(_ element: Element) -> Outcome {
        switch _machine.withLock({ $0.offer(element) }) {
        case .resume(let waiter, let delivery):
            waiter.resume(returning: delivery)
            return .enqueued
        case .enqueued:
            return .enqueued
        case .dropped(let lost):
            _ = lost  // released here, holding no lock: a mail's deinit is user code
            return .dropped
        case .terminated(let refused):
            _ = refused
            return .terminated
        }
    }

    /// Tells the consumer, in order, that mail was lost before the next mail offered.
    @usableFromInline
    func tell(_ loss: MailLoss) {
        _machine.withLock { $0.tell(loss) }?.resume(returning: .lost(loss))
    }

    /// Puts a resuming subscription's kept mail ahead of everything, apart from the limit.
    func setReplay(_ kept: [Element]) {
        _machine.withLock { $0.setReplay(kept) }
    }

    /// The next element; nil once the subscription has ended and what it buffered is taken.
    func next() async -> Delivery<Element>? {
        switch _machine.withLock({ $0.next(waiter: nil) }) {
        case .take(let delivery): return delivery
        case .end: return nil
        case .suspend, .suspended: break
        }
        return await withUnsafeContinuation { (waiter: Waiter) in
            switch _machine.withLock({ $0.next(waiter: waiter) }) {
            case .take(let delivery): waiter.resume(returning: delivery)
            case .end: waiter.resume(returning: nil)
            case .suspended: break  // an offer, a finish or a cancel resumes it
            case .suspend: preconditionFailure("the machine asked for a continuation it was given")
            }
        }
    }

    /// The subscription ended from outside: the consumer drains what is buffered, then ends.
    @usableFromInline
    func finish() {
        _machine.withLock { $0.finish() }?.resume(returning: nil)
    }

    /// The consumer went: what is buffered is released, and a waiting consumer ends.
    @usableFromInline
    func cancel() {
        let cancelled = _machine.withLock { $0.cancel() }
        cancelled.waiter?.resume(returning: nil)
        _ = cancelled  // what it buffered is released here, holding no lock
    }
}
