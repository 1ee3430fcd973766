import AsyncMail
import Dispatch
@_exported import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct Ping: Mail, Equatable {
    let id: Int
}

struct Pong: Mail, Equatable {
    let id: Int
}

/// Mail that records which poster sent it and in what position.
struct Numbered: Mail, Equatable {
    let poster: Int
    let sequence: Int
}

struct RoomID: Hashable, Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// A sender value whose instances all share one hash, so only equality tells them apart.
struct Colliding: Hashable, Sendable {
    let name: String
    init(_ name: String) { self.name = name }
    func hash(into hasher: inout Hasher) { hasher.combine(0) }
}

/// A plain object sender, matched by identity.
final class Player: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// An object that is also Hashable by value; it must still match by identity.
final class Token: Hashable, Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
    static func == (lhs: Token, rhs: Token) -> Bool { lhs.value == rhs.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// An actor sender.
actor Lobby {}

extension Tag {
    /// Long, heavily concurrent tests; run them alone with `swift test --filter Stress`.
    @Tag static var stress: Self
}

/// Scales the stress suite's volume: `ASYNCMAIL_STRESS_SCALE` (e.g. 0.25) when set; otherwise 1,
/// the volume the reliability guarantees are stated for, or 0.5 under a sanitizer. ThreadSanitizer
/// runs these suites several times slower: at full volume on 2 cores they held the machine long
/// enough for other suites' waits to pass their limits (#54), so a contributor's plain
/// `swift test --sanitize=thread` failed where CI's, at 0.5, passed.
let stressScale: Double = {
    guard let raw = getenv("ASYNCMAIL_STRESS_SCALE"), let scale = Double(String(cString: raw)), scale > 0
    else { return addressSanitizerIsActive || threadSanitizerIsActive ? 0.5 : 1 }
    return scale
}()

func scaled(_ count: Int) -> Int { max(1, Int((Double(count) * stressScale).rounded())) }

/// Moves the seeded fuzzes to other seeds: `ASYNCMAIL_FUZZ_SEED` (a whole number, 0 when unset),
/// so that long runs (`Scripts/fuzz-order.sh`) try new rounds rather than the same ones again.
let fuzzSeed: UInt64 = {
    guard let raw = getenv("ASYNCMAIL_FUZZ_SEED"), let seed = UInt64(String(cString: raw)) else { return 0 }
    return seed
}()

/// Whether AddressSanitizer is loaded. It quarantines freed memory, so tests that need the
/// allocator to hand an address straight back cannot run under it.
let addressSanitizerIsActive: Bool = dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil

/// Whether ThreadSanitizer is loaded (`swift test --sanitize=thread`).
let threadSanitizerIsActive: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil

/// Lets other tasks run every so often. `post` never suspends, so a loop of nothing but posts
/// would keep its thread the way a loop of `continuation.yield` does; real posters await other
/// work between posts, and stress posters imitate that so they share the two-thread pool.
func cooperate(after index: Int, every interval: Int = 64) async {
    if index % interval == interval - 1 { await Task.yield() }
}

/// Code that parks its thread until the test releases it: a `where:` filter, a deinit, a lane probe.
final class Gate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// Called from the parked code: tells the test it is there, then waits.
    func park() {
        entered.signal()
        released.wait()
    }

    /// Waits, on a thread of its own, until the parked code is there.
    func waitUntilParked() async throws {
        try await withTimeout(.seconds(60)) { await onThread { self.entered.wait() } }
    }

    func release() { released.signal() }
}

/// The heavy suites (stress, order races) take turns, one test at a time.
///
/// Each floods the cooperative pool's queue, which is first in, first out, with its consumers'
/// wake-ups: all at once, they kept the quick tests beside them from a thread long enough for
/// their waits to run past their limits under ThreadSanitizer (#54; the measurements are in
/// Tests/README.md, rule 7). The models, one operation at a time, flood nothing and run beside
/// them. The wait for a turn holds no thread.
///
/// A heavy test's hang guard is `limit`, counted from its turn: Swift Testing's `.timeLimit`
/// wraps this trait's scope, so it would count the wait for the turn too, which under
/// ThreadSanitizer on 2 cores is longer than the test itself (Tests/README.md, rule 7).
struct HeavyTurns: SuiteTrait, TestTrait, TestScoping {
    /// How long a test may run once its turn has come; nil: no limit of its own.
    var limit: Duration?

    var isRecursive: Bool { true }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        await Self.turns.take()
        do {
            if let limit {
                try await Self.run(function, within: limit, reportingAt: test.sourceLocation)
            } else {
                try await function()
            }
        } catch {
            await Self.turns.give()
            throw error
        }
        await Self.turns.give()
    }

    /// Runs `function`, recording an issue and cancelling it if it has not finished within
    /// `limit`. Structured, as `.timeLimit` is: a test that ignores cancellation is still awaited,
    /// and CI's outer `timeout` ends the process.
    static func run(
        _ function: @Sendable () async throws -> Void,
        within limit: Duration,
        reportingAt sourceLocation: SourceLocation
    ) async throws {
        try await withoutActuallyEscaping(function) { function in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await function()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return false
                }
                let finished = try await group.next() ?? true
                group.cancelAll()
                if !finished {
                    let what = "ran past its limit of \(limit), counted from its turn"
                    Issue.record(Comment(rawValue: what), sourceLocation: sourceLocation)
                }
            }
        }
    }

    /// The one turn, shared by every heavy test in the process.
    private static let turns = Turns()

    /// One turn at a time, handed on in the order it was asked for.
    private actor Turns {
        private var isTaken = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func take() async {
            guard isTaken else {
                isTaken = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func give() {
            if waiting.isEmpty { isTaken = false } else { waiting.removeFirst().resume() }
        }
    }
}

extension Trait where Self == HeavyTurns {
    /// The test waits for its turn among the heavy ones; see ``HeavyTurns``.
    static var heavyTurns: Self { HeavyTurns() }

    /// The test waits for its turn among the heavy ones, then fails if it runs past `limit`.
    static func heavyTurns(limit: Duration) -> Self { HeavyTurns(limit: limit) }
}
