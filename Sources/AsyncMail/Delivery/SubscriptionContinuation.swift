/// Where posts yield to a subscription, and what finishes it: the part of
/// `AsyncStream.Continuation`'s surface the core uses, over a ``SubscriptionBuffer``.
@usableFromInline
struct SubscriptionContinuation<Element: Sendable>: Sendable, Finishable {
    @usableFromInline let _buffer: SubscriptionBuffer<Element>
    @inlinable init(_buffer: SubscriptionBuffer<Element>) { self._buffer = _buffer }

    @inlinable
    static func makeStream(
        of type: Element.Type = Element.self,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded
    ) -> (AsyncStream<Element>, SubscriptionContinuation<Element>) {
        let buffer = SubscriptionBuffer<Element>(policy: bufferingPolicy)
        let end = SubscriptionConsumerEnd(buffer)
        let stream = AsyncStream(unfolding: { await end._buffer.next() }, onCancel: { buffer.cancel() })
        return (stream, SubscriptionContinuation(_buffer: buffer))
    }

    @inlinable
    @discardableResult
    func yield(_ element: Element) -> AsyncStream<Element>.Continuation.YieldResult { _buffer.yield(element) }

    @inlinable
    func finish() { _buffer.finish() }

    /// Set before the stream can end; set on an ended stream, it never runs (as `AsyncStream`'s).
    @inlinable
    var onTermination: (@Sendable (AsyncStream<Element>.Continuation.Termination) -> Void)? {
        get { _buffer._state.withLock { $0.onTermination } }
        nonmutating set {
            _buffer._state.withLock { state in
                if !state.machine.isEnded { state.onTermination = newValue }
            }
        }
    }
}
