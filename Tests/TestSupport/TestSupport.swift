import AsyncMail
import Synchronization
import Testing

/// Thrown (after recording an issue) when an awaited event does not happen in time.
public struct TimedOut: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "timed out after \(limit)" }
}

/// Runs `operation`, failing the test loudly if it has not finished within `limit`.
///
/// The timeout is a guard against hangs, never a way to wait: `operation` awaits the real event.
/// It returns at the limit even if `operation` ignores cancellation (a structured task group
/// would wait for it, turning a hang into a hang), so a stuck test fails instead of stalling the run.
public func withTimeout<T: Sendable>(
    _ limit: Duration = .seconds(20),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let (outcomes, report) = AsyncStream.makeStream(of: Result<T, any Error>?.self)
    let work = Task {
        do { report.yield(.success(try await operation())) } catch { report.yield(.failure(error)) }
    }
    let timer = Task {
        try? await Task.sleep(for: limit)
        report.yield(nil)
    }
    defer { timer.cancel() }
    for await outcome in outcomes {
        if let outcome { return try outcome.get() }
        break
    }
    work.cancel()
    Issue.record("timed out after \(limit)", sourceLocation: sourceLocation)
    throw TimedOut(limit: limit)
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The first `count` elements, or fewer if the sequence ends first.
    public func first(_ count: Int) async rethrows -> [Element] {
        var collected: [Element] = []
        guard count > 0 else { return collected }
        for try await element in self {
            collected.append(element)
            if collected.count == count { break }
        }
        return collected
    }

    /// Every element until the sequence finishes.
    public func collect() async rethrows -> [Element] {
        var collected: [Element] = []
        for try await element in self { collected.append(element) }
        return collected
    }
}

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
