/// Values taken out of a locked section only so that they are released after it.
///
/// Releasing a value can run user code (a mail's deinit, a filter's captures), which must never
/// run while a lock is held; so a locked section that drops state moves it in here instead, and
/// the caller lets go of this once it holds no lock.
///
/// Why `@unchecked Sendable` is safe: nothing ever reads what this holds, so the only thing that
/// happens to it on another thread is its release. What it holds was taken out of the registry
/// under the registry lock, so no other thread can reach it any more, and every write to it
/// happened before that lock was released, which orders them before the release. The tests that
/// close a mailroom whose kept mail ends one of its own streams, run under ThreadSanitizer in CI,
/// exercise exactly this hand-over.
@usableFromInline
struct Discarded: @unchecked Sendable {
    private let values: [AnyObject]

    @usableFromInline
    init(_ values: [AnyObject]) {
        self.values = values
    }
}
