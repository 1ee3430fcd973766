/// The buffer behind a subscription's stream (a dropping subscription's mail goes to its
/// ``DropBuffer`` instead): ``SubscriptionBufferMachine`` behind the core's lock, and the
/// termination handler the registry sets. Its consumer reads it through an
/// `AsyncStream(unfolding:)` (see ``SubscriptionContinuation/makeStream(of:bufferingPolicy:)``);
/// posts yield to it through a ``SubscriptionContinuation``.
///
/// Why not `AsyncStream`'s own buffer: its `next()` registers a cancellation handler and takes
/// a continuation for every element, even one already buffered, and its generic code looks up
/// the element type's metadata on every call; this one hands buffered mail out under its lock
/// and returns (the measured difference is in `Benchmarks/README.md`).
///
/// Its lock is the subscription's own: only the posts that reach this subscription and its one
/// consumer take it, briefly, and nothing runs under it but the machine. The termination
/// handler runs, a waiting consumer is resumed, and dropped mail is released, after unlocking.
@usableFromInline
final class SubscriptionBuffer<Element: Sendable>: Sendable {
    @usableFromInline typealias Waiter = UnsafeContinuation<Element?, Never>
    @usableFromInline typealias Termination = AsyncStream<Element>.Continuation.Termination
    @usableFromInline typealias Handler = @Sendable (Termination) -> Void

    @usableFromInline
    struct State {
        @usableFromInline var machine: SubscriptionBufferMachine<Element, Waiter>
        @usableFromInline var onTermination: Handler?

        @inlinable
        init(machine: SubscriptionBufferMachine<Element, Waiter>, onTermination: Handler?) {
            self.machine = machine
            self.onTermination = onTermination
        }
    }

    @usableFromInline let _state: Locked<State>

    @inlinable
    init(policy: AsyncStream<Element>.Continuation.BufferingPolicy) {
        // One per subscription, shared only by its posts and its consumer: a compact lock.
        _state = Locked(
            State(machine: SubscriptionBufferMachine(policy: policy), onTermination: nil),
            compactLock: true
        )
    }

    @inlinable
    func yield(_ element: Element) -> AsyncStream<Element>.Continuation.YieldResult {
        switch _state.withLock({ $0.machine.yield(element) }) {
        case .resume(let waiter):
            waiter.resume(returning: element)
            return .enqueued(remaining: 0)
        case .result(let result):
            return result  // a dropped mail is released with it, holding no lock
        }
    }

    @inlinable
    func next() async -> Element? {
        switch _state.withLock({ $0.machine.next(waiter: nil) }) {
        case .take(let element): return element
        case .end: return nil
        case .suspend, .suspended: break
        }
        return await withUnsafeContinuation { (waiter: Waiter) in
            switch _state.withLock({ $0.machine.next(waiter: waiter) }) {
            case .take(let element): waiter.resume(returning: element)
            case .end: waiter.resume(returning: nil)
            case .suspended: break
            case .suspend: preconditionFailure("the machine asked for a continuation it was given")
            }
        }
    }

    @inlinable
    func finish() {
        let (waiter, handler) = _state.withLock { state -> (Waiter?, Handler?) in
            let (waiter, ended) = state.machine.finish()
            defer { state.onTermination = nil }
            return (waiter, ended ? state.onTermination : nil)
        }
        handler?(.finished)
        waiter?.resume(returning: nil)
    }

    @inlinable
    func cancel() {
        let (cancelled, handler) = _state.withLock { state in
            let cancelled = state.machine.cancel()
            defer { state.onTermination = nil }
            return (cancelled, cancelled.ended ? state.onTermination : nil)
        }
        // The handler first, as `AsyncStream` runs a cancelled stream's: the registry's finishes
        // and unregisters the subscription.
        handler?(.cancelled)
        cancelled.waiter?.resume(returning: nil)
        _ = cancelled.released  // released here, holding no lock: a mail's deinit is user code
    }
}

/// The consumer's end of a ``SubscriptionBuffer``, held only by the stream it hands out:
/// dropping the stream drops it, which cancels the buffer and so ends the subscription.
@usableFromInline
final class SubscriptionConsumerEnd<Element: Sendable>: Sendable {
    @usableFromInline let _buffer: SubscriptionBuffer<Element>
    @inlinable init(_ buffer: SubscriptionBuffer<Element>) { _buffer = buffer }
    deinit { _buffer.cancel() }
}
