/// A registered stream together with its continuation, so that the library itself can end the
/// subscription from outside the consuming loop (``Observation/cancel()`` does).
@usableFromInline
struct RegisteredStream<Element: Sendable>: Sendable {
    /// What `subscribe` hands to the user.
    @usableFromInline let _stream: AsyncStream<Element>
    /// Finishing it ends the stream and removes the subscription at once.
    @usableFromInline let _continuation: SubscriptionContinuation<Element>
    /// The contexts beside the stream's mail, when its consumer hands them on (see ``PostContexts``).
    @usableFromInline let _contexts: PostContexts?

    @inlinable
    init(stream: AsyncStream<Element>, continuation: SubscriptionContinuation<Element>, contexts: PostContexts? = nil) {
        self._stream = stream
        self._continuation = continuation
        self._contexts = contexts
    }
}
