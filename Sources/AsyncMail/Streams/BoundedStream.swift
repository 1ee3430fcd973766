/// A subscription's mail with a backlog limit: when the consumer falls that far behind, the
/// subscription ends and iterating throws ``BacklogLimitExceeded``.
///
/// The safe choice for a subscription that feeds something slower than the poster, such as a
/// network connection: one client that stops reading can hold at most `backlogLimit` mails, then
/// its subscription is removed, where an `.unbounded` `AsyncStream` would grow without limit and a
/// `.bufferingNewest` one would lose mail silently. Make one with
/// ``Mailroom/subscribe(to:from:backlog:startingWithLatest:where:)`` or
/// ``Mailroom/subscribe(to:fromAny:backlog:startingWithLatest:where:)``.
///
/// - Ordering: mail arrives in the order every subscription that hears the same posts shares
///   (see ``Mailroom/post(_:from:)``).
/// - Buffering: up to ``backlogLimit`` mails wait for the consumer. The post that finds the buffer
///   full does not buffer its mail: it ends the subscription, counts it in ``Receipt/ended``, and
///   the subscription no longer counts in ``Mailroom/subscriberCount(_:from:)`` when that post returns.
/// - Ending: the next `next()` after an overflow throws ``BacklogLimitExceeded`` at once, even if
///   mail is still buffered (that mail is discarded); any later call returns `nil`. Every other
///   end (``Mailroom/close()``, a departed object sender, cancelling the consuming task, dropping
///   the stream) returns `nil` after the buffered mail, exactly like `AsyncStream`.
/// - One consumer: iterate it once, from one task, like `AsyncStream`.
///
/// ```swift
/// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")), backlog: .ending(past: 256))
/// do {
///     for try await line in inbox { print(line.text) }
/// } catch {
///     print("ended: more than \(error.limit) lines behind")
/// }
/// ```
public struct BoundedStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = BacklogLimitExceeded

    let stream: AsyncStream<Element>
    /// Kept so that ``serve(delivering:receiving:)`` can end the subscription itself.
    let continuation: SubscriptionContinuation<Element>
    let endSignal: EndSignal
    /// The contexts of the buffered mail, under a mailroom with instrumentation, with what
    /// ``serve(delivering:receiving:)`` restores them by.
    let contexts: PostContexts?

    init(_ subscription: RegisteredStream<Element>, endSignal: EndSignal) {
        self.stream = subscription._stream
        self.continuation = subscription._continuation
        self.contexts = subscription._contexts
        self.endSignal = endSignal
    }

    /// The subscription underneath, for an observation to run its handler from.
    var subscription: RegisteredStream<Element> {
        RegisteredStream(stream: stream, continuation: continuation, contexts: contexts)
    }

    /// The most mail this subscription buffers for a consumer that is behind.
    public var backlogLimit: Int { endSignal.limit }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator(), endSignal: endSignal, contexts: contexts)
    }

    /// Iterates a ``BoundedStream``; throws ``BacklogLimitExceeded`` once, when it overflowed.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: AsyncStream<Element>.Iterator
        private let endSignal: EndSignal
        private let contexts: PostContexts?
        private var isDone = false
        /// The context of the mail `next()` returned last.
        var context = PostContext.none

        init(base: AsyncStream<Element>.Iterator, endSignal: EndSignal, contexts: PostContexts?) {
            self.base = base
            self.endSignal = endSignal
            self.contexts = contexts
        }

        /// The next mail, `nil` once the subscription has ended, or ``BacklogLimitExceeded``.
        public mutating func next(
            isolation actor: isolated (any Actor)? = #isolation
        ) async throws(BacklogLimitExceeded) -> Element? {
            guard !isDone else { return nil }
            try checkBacklog()
            let element = await base.next(isolation: actor)
            // Taken even when the mail in hand is about to be discarded, so the queues stay aligned.
            if element != nil, let contexts { context = contexts.pop() }
            // Checked again: the overflow may have happened while this consumer was suspended,
            // and the mail in hand would only delay the news.
            try checkBacklog()
            if element == nil { isDone = true }
            return element
        }

        public mutating func next() async throws(BacklogLimitExceeded) -> Element? {
            try await next(isolation: nil)
        }

        private mutating func checkBacklog() throws(BacklogLimitExceeded) {
            guard endSignal.isExceeded else { return }
            isDone = true
            throw BacklogLimitExceeded(limit: endSignal.limit)
        }
    }
}

extension BoundedStream {
    /// The same mail, each with the context it was posted in.
    ///
    /// Under a mailroom made with a ``MailroomInstrumentation`` (such as AsyncMailObservability's),
    /// each ``Contextual/context`` is what it captured when the mail was posted, so a `for await`
    /// loop can continue the poster's trace; otherwise it is ``PostContext/none``. Mail replayed
    /// by `startingWithLatest` carries ``PostContext/none``. Iterate either this or the stream
    /// itself, once: they share one buffer.
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, backlog: .ending(past: 256))
    /// for try await delivery in inbox.withContexts {
    ///     print(delivery.mail.text, delivery.context.value as Any)
    /// }
    /// ```
    public var withContexts: WithContexts { WithContexts(base: self) }

    /// A ``BoundedStream``'s mail, each with the context it was posted in; see ``withContexts``.
    public struct WithContexts: AsyncSequence, Sendable {
        public typealias Element = Contextual<BoundedStream.Element>
        public typealias Failure = BacklogLimitExceeded

        let base: BoundedStream

        public func makeAsyncIterator() -> Iterator {
            Iterator(base: base.makeAsyncIterator())
        }

        /// Iterates ``BoundedStream/WithContexts``; throws ``BacklogLimitExceeded`` as the stream does.
        public struct Iterator: AsyncIteratorProtocol {
            private var base: BoundedStream.Iterator

            init(base: BoundedStream.Iterator) {
                self.base = base
            }

            /// The next mail with its context, `nil` once the subscription has ended.
            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(BacklogLimitExceeded) -> Contextual<BoundedStream.Element>? {
                guard let mail = try await base.next(isolation: actor) else { return nil }
                return Contextual(mail: mail, context: base.context)
            }

            public mutating func next() async throws(BacklogLimitExceeded) -> Contextual<BoundedStream.Element>? {
                try await next(isolation: nil)
            }
        }
    }
}
