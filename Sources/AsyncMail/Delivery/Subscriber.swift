import Synchronization

/// One subscription as a post sees it: where to yield, and what it wants.
///
/// A class, not a struct: a post copies subscribers out of the registry, and copying a
/// generic struct whose field is a generic `AsyncStream.Continuation` went through value
/// witnesses and a metadata lookup per copy, a large share of what a post adds to a yield;
/// copying a reference is a retain.
@usableFromInline
final class Subscriber<Element: Sendable>: Sendable {
    @usableFromInline let _continuation: SubscriptionContinuation<Element>
    /// The subscription's post-time filter; `nil` takes everything that routes here.
    @usableFromInline let _accepts: (@Sendable (Element) -> Bool)?
    /// Set for a subscription with a backlog limit: a full buffer ends it instead of losing mail.
    @usableFromInline let _endSignal: EndSignal?
    /// Set for a subscription that drops mail past its backlog and tells the loss in order: posts
    /// offer mail to it instead of to `_continuation`, whose stream then only carries the end.
    @usableFromInline let _dropBuffer: DropBuffer<Element>?
    /// The contexts of its buffered mail, for a consumer that hands them on (an observation, a
    /// bounded stream) under a mailroom with instrumentation; `nil` otherwise.
    @usableFromInline let _contexts: PostContexts?
    /// Where it sits in its route's ``SubscriberList/entries``, or -1 when it is in none, so that
    /// removal needs no lookup table. Read and written only under the lock that guards that list
    /// (see ``SubscriberList``), which orders every access; it is atomic (relaxed) only so that
    /// the class can be `Sendable`.
    @usableFromInline let _position = Atomic<Int>(-1)

    /// Tells the subscription's consumer, in order, that mail was lost before the next one; only
    /// a subscription that drops and tells has a consumer to tell.
    @inlinable
    func tell(_ loss: MailLoss) {
        _dropBuffer?.tell(loss)
    }

    @inlinable
    init(
        continuation: SubscriptionContinuation<Element>,
        accepts: (@Sendable (Element) -> Bool)?,
        endSignal: EndSignal? = nil,
        dropBuffer: DropBuffer<Element>? = nil,
        contexts: PostContexts? = nil
    ) {
        self._continuation = continuation
        self._accepts = accepts
        self._endSignal = endSignal
        self._dropBuffer = dropBuffer
        self._contexts = contexts
    }
}
