import Synchronization

/// The contexts of one subscription's buffered mail, in the buffer's order.
///
/// An `AsyncStream`'s elements are the mail itself, so the context travels beside it: a post
/// pushes the context and yields the mail in one step under this queue's lock (``offer(_:_:)``),
/// and the consumer pops one after it takes a mail. The two queues stay aligned because no two
/// posts can interleave their push and yield (a tap hears posts that share no lane), each pushed
/// context is either followed by its mail or taken back in the same step, when the buffer refused
/// the mail, and only buffers that refuse new mail rather than evict old mail get one: a
/// `.bufferingNewest` buffer evicts a mail the consumer may be taking at that moment, which no
/// queue beside it can follow. Its length is bounded by the buffer's.
///
/// It exists only under instrumentation, and holds the instrumentation that captured its
/// contexts: a consumer that has a queue has what restores them, and one without has nothing to do.
@usableFromInline
final class PostContexts: Sendable {
    private struct Queue {
        var contexts: [PostContext] = []
        var head = 0
    }

    private let queue = Locked(Queue())

    /// What captured the contexts, and restores them around a handler call or a delivery.
    let instrumentation: any MailroomInstrumentation

    @usableFromInline init(instrumentation: any MailroomInstrumentation) {
        self.instrumentation = instrumentation
    }

    /// Pushes `context` and yields its mail with `yield`, as one step; takes the context back
    /// when the buffer refused the mail.
    ///
    /// Yielding under this lock is safe: the buffer never evicts (see above), so no mail is
    /// released here, and a consumer's `pop()` takes this lock while holding nothing else.
    @usableFromInline
    func offer<Element: Sendable>(
        _ context: PostContext,
        _ yield: () -> AsyncStream<Element>.Continuation.YieldResult
    ) -> AsyncStream<Element>.Continuation.YieldResult {
        // The refused mail and its context are returned, to be released after unlocking: both
        // hold user values.
        let (result, _) = queue.withLock { queue -> (AsyncStream<Element>.Continuation.YieldResult, PostContext?) in
            queue.contexts.append(context)
            let result = yield()
            guard case .dropped = result else { return (result, nil) }
            return (result, queue.contexts.removeLast())
        }
        return result
    }

    /// After the consumer took a mail: that mail's context.
    func pop() -> PostContext {
        let (context, _) = queue.withLock {
            queue -> (PostContext, released: [PostContext]) in
            guard queue.head < queue.contexts.count else { return (.none, []) }
            let context = queue.contexts[queue.head]
            queue.head += 1
            // Compacts once half is consumed, so popping stays O(1) amortised. What it removes is
            // returned, so that it is released after unlocking: a context holds user values.
            guard queue.head >= 32, queue.head * 2 >= queue.contexts.count else { return (context, []) }
            let released = Array(queue.contexts[..<queue.head])
            queue.contexts.removeFirst(queue.head)
            queue.head = 0
            return (context, released)
        }
        return context
    }

    /// How many contexts wait for their mail to be taken; for tests.
    var count: Int {
        queue.withLock { $0.contexts.count - $0.head }
    }
}
