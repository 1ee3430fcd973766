import AsyncMail
@_exported import AsyncMailTesting
import Synchronization

/// A value behind a lock that ThreadSanitizer can see, for tests' own shared state.
///
/// `Synchronization.Mutex` is invisible to ThreadSanitizer on Linux; this uses AsyncMail's own
/// annotation, the same one its locks use, so the test suite's TSan run reports only real races.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    private let threadSanitizer = ThreadSanitizer.current

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    public func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock(annotating: threadSanitizer, as: self, body)
    }
}
