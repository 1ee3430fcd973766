/// What one subscription made with a ``Backlog`` does when its consumer falls that far behind:
/// made fresh for each subscription, and shared by its stream and the posts that reach it.
@usableFromInline
enum BacklogOverflow<Element: Sendable>: Sendable {
    /// End the subscription (``BoundedStream``).
    case end(EndSignal)
    /// Drop mail and tell the loss in order (``DroppingStream``).
    case drop(DropBuffer<Element>)

    var endSignal: EndSignal? {
        if case .end(let endSignal) = self { endSignal } else { nil }
    }

    var dropBuffer: DropBuffer<Element>? {
        if case .drop(let dropBuffer) = self { dropBuffer } else { nil }
    }

    /// The policy of the stream underneath: a bounded stream buffers there; a dropping one
    /// buffers in its ``DropBuffer``, and its stream carries only the end.
    var bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy {
        switch self {
        case .end(let endSignal): .bufferingOldest(endSignal.limit)
        case .drop: .unbounded
        }
    }
}
