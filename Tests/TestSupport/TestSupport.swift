import AsyncMail
@_exported import AsyncMailTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``onThread(_:)`` runs, carried across `pthread_create`.
private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void

    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Runs `body` on a new thread of its own and returns its result.
///
/// For code that blocks on purpose (a filter parked at a gate): on Linux the cooperative pool
/// and `DispatchQueue.global()` share as many threads as there are cores, so parking one of
/// theirs can stall every task in the test process.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let box = Unmanaged.passRetained(ThreadBody { continuation.resume(returning: body()) }).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let created = pthread_create(
            &thread,
            nil,
            { raw in
                #if canImport(Darwin)
                Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue().run()
                #else
                Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
                #endif
                return nil
            },
            box
        )
        precondition(created == 0, "pthread_create failed: \(created)")
        #if canImport(Darwin)
        pthread_detach(thread!)
        #else
        pthread_detach(thread)
        #endif
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The first `count` elements, with no time limit of its own: for a consumer task or a
    /// task-group child whose result the test awaits under `withTimeout`, the one hang guard.
    /// Anywhere else, AsyncMailTesting's `first(_:within:)` is the call.
    public func untimedFirst(_ count: Int) async rethrows -> [Element] {
        var collected: [Element] = []
        guard count > 0 else { return collected }
        for try await element in self {
            collected.append(element)
            if collected.count == count { break }
        }
        return collected
    }

    /// Every element until the sequence finishes, with no time limit of its own (see
    /// ``untimedFirst(_:)``); anywhere else, AsyncMailTesting's `collect(within:)` is the call.
    public func untimedCollect() async rethrows -> [Element] {
        var collected: [Element] = []
        for try await element in self { collected.append(element) }
        return collected
    }
}
