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

    private enum State {
        case live(waiting: [CheckedContinuation<Reason, Never>])
        case ended(Reason)
    }

    /// What ``end(_:)`` leaves to do once the lock is released: wake whoever waits for the end.
    private struct Waking {
        let waiting: [CheckedContinuation<Reason, Never>]
        let reason: Reason

        func perform() {
            for continuation in waiting { continuation.resume(returning: reason) }
        }
    }

    /// The most mail the stream buffers before the next post ends it.
    let limit: Int
    /// Set once with the reason, so that `next()` pays an atomic load, not a lock, per mail.
    private let exceeded = Atomic<Bool>(false)
    private let state = Locked<State>(.live(waiting: []))

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the subscription ended because its backlog passed ``limit``.
    var isExceeded: Bool { exceeded.load(ordering: .acquiring) }

    /// Records how the subscription ended, unless it already has.
    @usableFromInline
    func end(_ reason: Reason) {
        let waking: Waking? = state.withLock { state in
            switch state {
            case .ended:
                return nil
            case .live(let waiting):
                state = .ended(reason)
                if reason == .backlogLimitExceeded { exceeded.store(true, ordering: .releasing) }
                return Waking(waiting: waiting, reason: reason)
            }
        }
        waking?.perform()
    }

    /// Waits until the subscription has ended, and says how.
    func ended() async -> Reason {
        await withCheckedContinuation { continuation in
            let reason: Reason? = state.withLock { state in
                switch state {
                case .ended(let reason):
                    return reason
                case .live(var waiting):
                    waiting.append(continuation)
                    state = .live(waiting: waiting)
                    return nil
                }
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }
}
