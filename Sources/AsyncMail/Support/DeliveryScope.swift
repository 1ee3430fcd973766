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
/// A post asks this first, with no lock and nothing shared between threads: each thread keeps a
/// chain of frames on its own stack, found through a thread-specific key.
@usableFromInline
enum DeliveryScope {
    /// One delivery in progress on this thread: the mailroom's switchboard, and the frame of the
    /// delivery it interrupted (a filter of one mailroom may post to another), or nil.
    @usableFromInline
    struct Frame {
        @usableFromInline let _owner: UnsafeRawPointer
        @usableFromInline let _outer: UnsafeMutableRawPointer?

        @inlinable
        init(owner: UnsafeRawPointer, outer: UnsafeMutableRawPointer?) {
            self._owner = owner
            self._outer = outer
        }
    }

    /// The key of the innermost frame; created once per process, never deleted.
    @usableFromInline static let _key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key, nil)
        precondition(created == 0, "AsyncMail could not create a thread-specific key (\(created))")
        return key
    }()

    /// Whether this thread is inside a delivery of `owner`'s.
    @inlinable
    static func isDelivering(_ owner: AnyObject) -> Bool {
        let wanted = UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque())
        var frame = pthread_getspecific(_key)
        while let current = frame {
            let read = current.assumingMemoryBound(to: Frame.self).pointee
            if read._owner == wanted { return true }
            frame = read._outer
        }
        return false
    }

    /// Runs `body` as a delivery of `owner`'s on this thread.
    @inlinable
    static func delivering<Result>(_ owner: AnyObject, _ body: () -> Result) -> Result {
        let outer = pthread_getspecific(_key)
        var frame = Frame(owner: UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque()), outer: outer)
        // The frame lives on this stack for exactly as long as the key points at it.
        return withUnsafeMutablePointer(to: &frame) { pointer in
            pthread_setspecific(_key, pointer)
            defer { pthread_setspecific(_key, outer) }
            return body()
        }
    }
}
