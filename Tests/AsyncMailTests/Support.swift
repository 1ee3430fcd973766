import AsyncMail
import Testing

/// Thrown (after recording an issue) when an awaited event does not happen in time.
struct TimedOut: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "timed out after \(limit)" }
}

/// Runs `operation`, failing the test loudly if it has not finished within `limit`.
///
/// The timeout is a guard against hangs, never a way to wait: `operation` awaits the real event.
func withTimeout<T: Sendable>(
    _ limit: Duration = .seconds(20),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            Issue.record("timed out after \(limit)", sourceLocation: sourceLocation)
            throw TimedOut(limit: limit)
        }
        return value
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The first `count` elements, or fewer if the sequence ends first.
    func first(_ count: Int) async rethrows -> [Element] {
        var collected: [Element] = []
        guard count > 0 else { return collected }
        for try await element in self {
            collected.append(element)
            if collected.count == count { break }
        }
        return collected
    }

    /// Every element until the sequence finishes.
    func collect() async rethrows -> [Element] {
        var collected: [Element] = []
        for try await element in self { collected.append(element) }
        return collected
    }
}

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
