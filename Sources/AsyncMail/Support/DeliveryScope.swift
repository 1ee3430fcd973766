import CAsyncMail

/// Which mailrooms the calling thread is delivering a post of, right now.
///
/// A `where:` filter runs, and a mail evicted from a full buffer is released, while its post
/// holds its lanes' locks, and either can post to the same mailroom synchronously. Taking a lane
/// again would trap (the locks are not recursive) or, for another lane, could deadlock against a
/// thread doing the same the other way round; so such a post is deferred (see ``DeferredPosts``).
/// A post asks this first, with no lock and nothing shared between threads: each thread has one
/// thread-local pointer (in C: `asyncmail_delivery_innermost`) at a chain of frames on its own
/// stack (a filter of one mailroom may post to another, so deliveries nest).
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

    /// This thread's innermost frame, nil while it delivers nothing.
    @inlinable
    static var innermost: UnsafeMutablePointer<Frame>? {
        asyncmail_delivery_innermost().map { UnsafeMutableRawPointer(mutating: $0).assumingMemoryBound(to: Frame.self) }
    }

    /// Whether this thread is inside a delivery of `owner`'s.
    @inlinable
    static func isDelivering(_ owner: AnyObject) -> Bool {
        let wanted = UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque())
        var frame = innermost
        while let current = frame {
            if current.pointee._owner == wanted { return true }
            frame = current.pointee._outer
        }
        return false
    }

    /// Runs `body` as a delivery of `owner`'s on this thread.
    @inlinable @inline(__always)
    static func delivering<Result>(_ owner: AnyObject, _ body: () -> Result) -> Result {
        let outer = innermost
        var frame = Frame(owner: UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque()), outer: outer)
        // The frame lives on this stack for exactly as long as the thread-local points at it:
        // `body` is synchronous, so it runs on this thread to the end.
        return withUnsafeMutablePointer(to: &frame) { pointer in
            asyncmail_set_delivery_innermost(pointer)
            defer { asyncmail_set_delivery_innermost(outer) }
            return body()
        }
    }
}
