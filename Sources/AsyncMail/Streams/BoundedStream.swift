/// A subscription's mail with a backlog limit: when the consumer falls that far behind, the
/// subscription ends and iterating throws ``BacklogLimitExceeded``.
///
/// The safe choice for a subscription that feeds something slower than the poster, such as a
/// network connection: one client that stops reading can hold at most `backlogLimit` mails, then
/// its subscription is removed, where an `.unbounded` `AsyncStream` would grow without limit and a
/// `.bufferingNewest` one would lose mail silently. Make one with
/// ``Mailroom/subscribe(to:from:backlogLimit:startingWithLatest:where:)`` or
/// ``Mailroom/subscribe(to:fromAny:backlogLimit:startingWithLatest:where:)``.
///
/// - Ordering: mail arrives in the one order every subscriber of the mailroom shares.
/// - Buffering: up to ``backlogLimit`` mails wait for the consumer. The post that finds the buffer
///   full does not buffer its mail: it ends the subscription, counts it in ``Receipt/ended``, and
///   the subscription no longer counts in ``Mailroom/subscriberCount(for:)`` when that post returns.
/// - Ending: the next `next()` after an overflow throws ``BacklogLimitExceeded`` at once, even if
///   mail is still buffered (that mail is discarded); any later call returns `nil`. Every other
///   end (``Mailroom/close()``, a departed object sender, cancelling the consuming task, dropping
///   the stream) returns `nil` after the buffered mail, exactly like `AsyncStream`.
/// - One consumer: iterate it once, from one task, like `AsyncStream`.
///
/// ```swift
/// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")), backlogLimit: 256)
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
    let continuation: AsyncStream<Element>.Continuation
    let endSignal: EndSignal

    init(_ subscription: Subscription<Element>, endSignal: EndSignal) {
        self.stream = subscription._stream
        self.continuation = subscription._continuation
        self.endSignal = endSignal
    }

    /// The subscription underneath, for an observation to run its handler from.
    var subscription: Subscription<Element> { Subscription(stream: stream, continuation: continuation) }

    /// The most mail this subscription buffers for a consumer that is behind.
    public var backlogLimit: Int { endSignal.limit }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator(), endSignal: endSignal)
    }

    /// Iterates a ``BoundedStream``; throws ``BacklogLimitExceeded`` once, when it overflowed.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: AsyncStream<Element>.Iterator
        private let endSignal: EndSignal
        private var isDone = false

        init(base: AsyncStream<Element>.Iterator, endSignal: EndSignal) {
            self.base = base
            self.endSignal = endSignal
        }

        /// The next mail, `nil` once the subscription has ended, or ``BacklogLimitExceeded``.
        public mutating func next(
            isolation actor: isolated (any Actor)? = #isolation
        ) async throws(BacklogLimitExceeded) -> Element? {
            guard !isDone else { return nil }
            try checkBacklog()
            let element = await base.next(isolation: actor)
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
