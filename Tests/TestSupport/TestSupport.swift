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

/// Suspends until the calling task is cancelled, holding no thread: the body of a test's
/// stand-in for demand-driven work. Spinning on `Task.yield()` instead keeps a thread of the
/// cooperative pool (two on a 2-core machine) busy for the whole test, and slows every test
/// running beside it.
public func untilCancelled() async {
    let (never, continuation) = AsyncStream.makeStream(of: Never.self)
    for await _ in never {}  // returns when the task is cancelled
    withExtendedLifetime(continuation) {}
}
