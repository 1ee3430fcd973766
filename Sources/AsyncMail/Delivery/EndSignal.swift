import Synchronization

/// How a subscription with a backlog limit ended, recorded once and shared by its stream, the
/// post that overflowed it, and ``BoundedStream/serve(delivering:receiving:)``.
///
/// A post sets it to ``Reason/backlogLimitExceeded`` before finishing the stream, so that the
/// consumer learns why from its next `next()` rather than from an ordinary end. Every other end
/// (cancellation, a dropped stream, `close()`) reaches it through the stream's termination
/// handler as ``Reason/finished``. The first reason wins.
@usableFromInline
final class EndSignal: Sendable {
    @usableFromInline
    enum Reason: Sendable, Equatable {
        /// A post found the buffer full; the subscription ended instead of growing.
        case backlogLimitExceeded
        /// The stream ended any other way.
        case finished
    }

    /// The most mail the stream buffers before the next post ends it.
    let limit: Int
    /// Set once the winning reason is the backlog limit, so that `next()` pays an atomic load, not a
    /// lock, per mail.
    private let exceeded = Atomic<Bool>(false)
    private let reason = OneShot<Reason>()

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the subscription ended because its backlog passed ``limit``.
    var isExceeded: Bool { exceeded.load(ordering: .acquiring) }

    /// Records how the subscription ended, unless it already has.
    @usableFromInline
    func end(_ reason: Reason) {
        // Only the reason that wins sets the flag. Its readers (`next()`, an observation) look
        // after the stream has finished, which the overflowing post does after this returns.
        if self.reason.resolve(reason), reason == .backlogLimitExceeded {
            exceeded.store(true, ordering: .releasing)
        }
    }

    /// Waits until the subscription has ended, and says how.
    func ended() async -> Reason {
        await reason.wait()
    }
}
