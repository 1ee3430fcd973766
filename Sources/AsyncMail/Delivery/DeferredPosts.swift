import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Posts made from inside a delivery of the same mailroom, waiting for it to end.
///
/// A `where:` filter runs, and a mail evicted from a full buffer is released, while its post
/// holds its lanes (see ``Lanes``), and either can call ``Mailroom/postSynchronously(_:)``.
/// Delivering the new post there would take a lane this thread holds (a non-recursive lock
/// traps), or deliver it in the middle of the post in progress, so some subscribers would see
/// the two in one order and the rest in the other. Instead such a post is *deferred*: it returns
/// at once with a ``Receipt`` that counts its mail as deferred, and the same thread delivers it,
/// as an ordinary post, as soon as the post in progress has released its lanes. The posts a
/// thread defers run in the order it made them. ``DeliveryScope`` tells a post that it is inside
/// a delivery.
@usableFromInline
final class DeferredPosts: Sendable {
    /// A post made by a delivering thread, waiting for the delivery to end.
    private struct Deferred {
        let thread: UInt
        let post: @Sendable () -> Void
    }

    /// The posts that wait, and the threads that are running theirs.
    private struct Queue {
        var waiting: [Deferred] = []
        var draining: Set<UInt> = []
    }

    /// How many deferred posts wait; every post reads it once, without a lock.
    @usableFromInline let _waitingCount = Atomic<Int>(0)
    private let queue = Locked(Queue())

    @usableFromInline init() {}

    /// An identity for the calling thread; never 0.
    @inlinable
    static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    /// Queues `post`, made by a delivering thread, to run once that delivery is over.
    @usableFromInline
    func add(_ post: @escaping @Sendable () -> Void) {
        let deferred = Deferred(thread: Self.currentThread, post: post)
        queue.withLock { $0.waiting.append(deferred) }
        _waitingCount.add(1, ordering: .relaxed)
    }

    /// Runs the posts this thread deferred, oldest first; called holding no lane.
    @inlinable
    func run() {
        if _waitingCount.load(ordering: .relaxed) > 0 { runWaiting() }
    }

    @usableFromInline
    func runWaiting() {
        let thread = Self.currentThread
        // A deferred post may defer more. Only the outermost loop runs them, so they keep the
        // order they were made in.
        guard queue.withLock({ $0.draining.insert(thread).inserted }) else { return }
        defer { queue.withLock { _ = $0.draining.remove(thread) } }
        while let post = next(of: thread) {
            _waitingCount.subtract(1, ordering: .relaxed)
            post()  // an ordinary post; no lane is held here
        }
    }

    private func next(of thread: UInt) -> (@Sendable () -> Void)? {
        queue.withLock { queue in
            guard let index = queue.waiting.firstIndex(where: { $0.thread == thread }) else { return nil }
            return queue.waiting.remove(at: index).post
        }
    }
}
