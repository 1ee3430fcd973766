/// A subscription's mail with a backlog that drops past its limit and tells each loss in order:
/// each element is a ``Delivery``, a mail or the mail lost at that point.
///
/// Make one with a dropping ``Backlog`` (``Backlog/droppingOldest(past:)`` or
/// ``Backlog/droppingNewest(past:)``). A consumer that falls behind keeps its subscription: it
/// gets the mails before a loss, then ``Delivery/lost(_:)`` with the exact count, then the mails
/// after it. What it receives plus what it is told it lost is every mail that matched it while it
/// was subscribed, and the posts' ``Receipt``s count the same drops in ``Receipt/dropped``. Under
/// a relay that shares the type's positions, mail numbered in the room that never reached this
/// process is told the same way, where it was missed (``MailLoss/Code/missed``).
///
/// - Ordering: mail arrives in the order every subscription that hears the same posts shares
///   (see ``Mailroom/post(_:from:)``); a loss stands where the lost mail would have.
/// - Buffering: at most ``backlogLimit`` mails wait for the consumer, and between two of them at
///   most one loss. A loss is told as soon as the consumer asks for the next element: after
///   the mail before it, without waiting for the mail after it.
/// - Ending: like `AsyncStream`, it ends with `nil` after its buffered mail when the mailroom
///   closes or its pinned object sender is gone, and at once when the consuming task is
///   cancelled or the stream is dropped, which removes the subscription.
/// - One consumer: iterate it once, from one task, like `AsyncStream`.
///
/// ```swift
/// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 256))
/// for await delivery in inbox {
///     switch delivery {
///     case .mail(let line): print(line.text)
///     case .lost(let loss): print("\(loss.count) lines missed")
///     }
/// }
/// ```
public struct DroppingStream<Content: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Delivery<Content>
    public typealias Failure = Never

    /// The subscription underneath: its stream carries only the end, and holding it keeps the
    /// subscription (dropping the last copy ends it, as dropping an `AsyncStream` does).
    let subscription: RegisteredStream<Content>
    let buffer: DropBuffer<Content>

    init(_ subscription: RegisteredStream<Content>, buffer: DropBuffer<Content>) {
        self.subscription = subscription
        self.buffer = buffer
    }

    /// The most mail this subscription buffers for a consumer that is behind.
    public var backlogLimit: Int { buffer.limit }

    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: subscription, buffer: buffer)
    }

    /// Iterates a ``DroppingStream``.
    public struct Iterator: AsyncIteratorProtocol {
        private let subscription: RegisteredStream<Content>
        private let buffer: DropBuffer<Content>

        init(subscription: RegisteredStream<Content>, buffer: DropBuffer<Content>) {
            self.subscription = subscription
            self.buffer = buffer
        }

        /// The next mail or loss; `nil` once the subscription has ended.
        public mutating func next() async -> Delivery<Content>? {
            let (buffer, continuation) = (buffer, subscription._continuation)
            return await withTaskCancellationHandler {
                await buffer.next()
            } onCancel: {
                buffer.cancel()
                continuation.finish()  // runs the termination handler: the subscription is removed
            }
        }
    }
}
