@_spi(AsyncMailInternal) import AsyncMail
import AsyncMailRelay
import AsyncMailTesting
import Foundation
import Testing

// What the relays' test suites share (AsyncMailPostgres's, the contract's against every engine):
// relays stopped when their test ends, and the output of a child process line by line.

/// Every relay a test starts, stopped when the test ends, however it ends: returning, throwing
/// or failing an expectation. A relay left running would keep listening, publishing and holding
/// connections into the next test.
public final class Fleet: Sendable {
    /// The fleet of the test running in this task; set by ``StopsRelays``.
    @TaskLocal public static var current: Fleet?

    private let running = Guarded<[Task<Void, any Error>]>([])

    public init() {}

    public func add(_ task: Task<Void, any Error>) {
        running.withLock { $0.append(task) }
    }

    /// Cancels every relay and waits for each to return (a relay already stopped returns at once).
    public func stopAll() async throws {
        let tasks = running.withLock { running in
            defer { running = [] }
            return running
        }
        for task in tasks { task.cancel() }
        for task in tasks { try await withTimeout { _ = try? await task.value } }
    }
}

/// Gives each test a ``Fleet`` that stops every relay it started once the test ends.
public struct StopsRelays: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public init() {}

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        let fleet = Fleet()
        do {
            try await Fleet.$current.withValue(fleet) { try await function() }
        } catch {
            try? await fleet.stopAll()
            throw error
        }
        try await fleet.stopAll()
    }
}

extension Trait where Self == StopsRelays {
    /// Every relay a test starts with ``start(_:sourceLocation:)`` is stopped when the test ends.
    public static var stopsRelays: Self { StopsRelays() }
}

/// Starts `relay` and returns once it listens; the task runs it until cancelled, at the latest
/// when the test ends (see ``StopsRelays``).
@discardableResult
public func start(
    _ relay: some MailRelay,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Task<Void, any Error> {
    let events = relay.events()
    let running = Task { try await relay.run() }
    if let fleet = Fleet.current {
        fleet.add(running)
    } else {
        Issue.record("a relay started outside a test with the .stopsRelays trait", sourceLocation: sourceLocation)
    }
    try await withTimeout {
        for await event in events where event.code == .listening { return }
    }
    return running
}

/// Stops a relay started with ``start(_:sourceLocation:)`` before the test ends, and waits for it.
public func stop(_ running: Task<Void, any Error>) async throws {
    running.cancel()
    try await withTimeout { _ = try? await running.value }
}

/// The lines a child process writes, as they come; the stream ends when the child's end closes.
///
/// Read by a thread of its own that blocks in `read`. Not `readabilityHandler`: its dispatch
/// source on the pipe crashed libdispatch's event loop on Linux once the child's end closed
/// ("Bad pointer dereference" in `_dispatch_event_loop_drain`, 1 contract run in 6 on 2026-11-28;
/// swift-corelibs-foundation#3276).
public func lines(of pipe: Pipe) -> AsyncStream<String> {
    let (lines, continuation) = AsyncStream.makeStream(of: String.self)
    let handle = pipe.fileHandleForReading
    Thread {
        var pending = Data()
        while true {
            let data = handle.availableData  // waits for bytes; empty once the writer closed
            if data.isEmpty { break }
            pending.append(data)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                continuation.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        continuation.finish()
    }.start()
    return lines
}
