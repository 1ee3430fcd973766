import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock every post holds from capturing its recipients to its last yield, which makes the
/// order posts take it the one order every subscriber sees; and what happens when the thread
/// that holds it posts again.
///
/// A `where:` filter runs, and a mail evicted from a full buffer is released, while its post
/// holds this lock, and either can call ``Mailroom/postSynchronously(_:)``. A non-recursive lock
/// would then trap, and a recursive one would deliver the new post in the middle of the one in
/// progress, so some subscribers would see the two in one order and the rest in the other.
/// Instead such a post is *deferred*: it returns at once with a ``Receipt`` that counts its mail
/// as deferred, and the same thread delivers it, as an ordinary post, as soon as the post in
/// progress has released the lock. The posts a thread defers run in the order it made them.
@usableFromInline
final class DeliveryLock: Sendable {
    /// A post made by the holding thread, waiting for the lock to be released.
    private struct Deferred {
        let thread: UInt
        let post: @Sendable () -> Void
    }

    /// The posts that wait, and the threads that are running theirs.
    private struct Queue {
        var waiting: [Deferred] = []
        var draining: Set<UInt> = []
    }

    @usableFromInline let _mutex = Mutex(())
    /// The thread holding `_mutex`, or 0. Only that thread writes its own id here, under the lock,
    /// and clears it before unlocking; a thread always sees its own writes, so a thread that reads
    /// its own id holds the lock, and relaxed ordering is enough.
    @usableFromInline let _holder = Atomic<UInt>(0)
    /// How many deferred posts wait; every post reads it once, without a lock.
    @usableFromInline let _waitingCount = Atomic<Int>(0)
    private let queue = Mutex(Queue())
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

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

    /// Whether the calling thread holds the lock: it is inside a post of this mailroom.
    @inlinable
    var isHeldByCurrentThread: Bool {
        // Unheld is the common case, and it needs no thread identity.
        let holder = _holder.load(ordering: .relaxed)
        return holder != 0 && holder == Self.currentThread
    }

    /// Runs `body` holding the lock.
    ///
    /// Never called by a thread that holds the lock already: every post checks
    /// ``isHeldByCurrentThread`` first and defers itself, and a replaying `subscribe`, which also
    /// takes this lock, is `async`, so no filter or deinit can call it. Should that change, the
    /// non-recursive mutex traps rather than deliver a post in the middle of another.
    @inlinable
    func withLock<Result: Sendable>(_ body: () -> Result) -> Result {
        let thread = Self.currentThread
        return _mutex.withLock(annotating: _threadSanitizer, as: self) { _ in
            _holder.store(thread, ordering: .relaxed)
            defer { _holder.store(0, ordering: .relaxed) }
            return body()
        }
    }

    /// Queues `post`, made by the thread that holds the lock, to run once it is released.
    @usableFromInline
    func deferPost(_ post: @escaping @Sendable () -> Void) {
        let deferred = Deferred(thread: Self.currentThread, post: post)
        withQueue { $0.waiting.append(deferred) }
        _waitingCount.add(1, ordering: .relaxed)
    }

    /// Runs the posts this thread deferred, oldest first; called with the lock not held.
    @inlinable
    func runDeferred() {
        if _waitingCount.load(ordering: .relaxed) > 0 { runDeferredPosts() }
    }

    @usableFromInline
    func runDeferredPosts() {
        let thread = Self.currentThread
        // A deferred post may defer more. Only the outermost loop runs them, so they keep the
        // order they were made in.
        guard withQueue({ $0.draining.insert(thread).inserted }) else { return }
        defer { withQueue { _ = $0.draining.remove(thread) } }
        while let post = nextDeferred(of: thread) {
            _waitingCount.subtract(1, ordering: .relaxed)
            post()  // an ordinary post; no lock is held here
        }
    }

    private func nextDeferred(of thread: UInt) -> (@Sendable () -> Void)? {
        withQueue { queue in
            guard let index = queue.waiting.firstIndex(where: { $0.thread == thread }) else { return nil }
            return queue.waiting.remove(at: index).post
        }
    }

    private func withQueue<Result: Sendable>(_ body: (inout Queue) -> Result) -> Result {
        // A second address inside this object: the queue's lock is a lock of its own.
        queue.withLock(annotating: _threadSanitizer, as: self, offset: 1, body)
    }
}
