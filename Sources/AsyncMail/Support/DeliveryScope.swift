#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which mailrooms the calling thread is delivering a post of, right now.
///
/// A `where:` filter runs, and a mail evicted from a full buffer is released, while its post
/// holds its lanes' locks, and either can post to the same mailroom synchronously. Taking a lane
/// again would trap (the locks are not recursive) or, for another lane, could deadlock against a
/// thread doing the same the other way round; so such a post is deferred (see ``DeferredPosts``).
/// A post asks this first, with no lock and nothing shared between threads: each thread has one
/// record, found through a thread-specific key, that points at a chain of frames on its
/// own stack (a filter of one mailroom may post to another, so deliveries nest).
@usableFromInline
enum DeliveryScope {
    /// One delivery in progress on this thread: the mailroom's switchboard, and the frame of the
    /// delivery it interrupted, or nil.
    @usableFromInline
    struct Frame {
        @usableFromInline let _owner: UnsafeRawPointer
        @usableFromInline let _outer: UnsafeMutablePointer<Frame>?

        @inlinable
        init(owner: UnsafeRawPointer, outer: UnsafeMutablePointer<Frame>?) {
            self._owner = owner
            self._outer = outer
        }
    }

    /// What a thread keeps: its innermost frame. Allocated the first time the thread delivers and
    /// freed when it exits, so a post pays one `pthread_getspecific` and no `setspecific`.
    @usableFromInline
    struct ThreadRecord {
        @usableFromInline var _innermost: UnsafeMutablePointer<Frame>?
    }

    /// The key of each thread's record; created once per process, never deleted.
    @usableFromInline static let _key: pthread_key_t = {
        var key = pthread_key_t()
        #if canImport(Darwin)
        let created = pthread_key_create(&key) { $0.deallocate() }
        #else
        let created = pthread_key_create(&key) { $0?.deallocate() }
        #endif
        precondition(created == 0, "AsyncMail could not create a thread-specific key (\(created))")
        return key
    }()

    /// This thread's record, nil until it first delivers.
    @inlinable
    static var thread: UnsafeMutablePointer<ThreadRecord>? {
        pthread_getspecific(_key)?.assumingMemoryBound(to: ThreadRecord.self)
    }

    /// Whether this thread is inside a delivery of `owner`'s.
    @inlinable
    static func isDelivering(_ owner: AnyObject) -> Bool {
        let wanted = UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque())
        var frame = thread?.pointee._innermost
        while let current = frame {
            if current.pointee._owner == wanted { return true }
            frame = current.pointee._outer
        }
        return false
    }

    /// Runs `body` as a delivery of `owner`'s on this thread.
    @inlinable @inline(__always)
    static func delivering<Result>(_ owner: AnyObject, _ body: () -> Result) -> Result {
        let record = thread ?? makeThread()
        let outer = record.pointee._innermost
        var frame = Frame(owner: UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque()), outer: outer)
        // The frame lives on this stack for exactly as long as the record points at it.
        return withUnsafeMutablePointer(to: &frame) { pointer in
            record.pointee._innermost = pointer
            defer { record.pointee._innermost = outer }
            return body()
        }
    }

    /// Makes this thread's record; once per thread.
    @usableFromInline
    static func makeThread() -> UnsafeMutablePointer<ThreadRecord> {
        let record = UnsafeMutablePointer<ThreadRecord>.allocate(capacity: 1)
        record.initialize(to: ThreadRecord(_innermost: nil))
        let stored = pthread_setspecific(_key, record)
        precondition(stored == 0, "AsyncMail could not set a thread-specific value (\(stored))")
        return record
    }
}
