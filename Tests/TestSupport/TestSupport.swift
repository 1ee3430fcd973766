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

/// Runs `body` on a new thread of its own at the lowest scheduling priority, and returns its result.
///
/// For stress posters, which only load the mailroom. Their threads compete with the cooperative
/// pool's (one per core) for the cores: at the normal priority, the 16 posting threads of
/// `OrderRaceTests` left the pool's 2 threads a small share of 2 cores, a task waited up to 18 s
/// to run under ThreadSanitizer, and the waits of tests beside them ran past their limits (#54).
/// At nice 19 (Linux), a poster runs when the pool's threads leave a core free, and still races
/// them there.
public func onBackgroundThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await onThread {
        #if os(Linux)
        // On Linux the nice value is the thread's own, and `who` 0 names the calling thread.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
        return body()
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
