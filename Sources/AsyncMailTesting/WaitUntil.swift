import Testing

/// Waits until `condition` holds, checking it again and again, and fails the test loudly if it
/// still does not hold at `limit`.
///
/// For a state that nothing announces: a counter or a metric updated just after the event the
/// test saw (the mail arrived, so the sender's counter is about to say so), a span that ends
/// after the mail it carried was delivered, a row in a database, a child process's exit.
/// Anything that has an event or a stream of its own (a mail, an observation's progress, a
/// relay's events) is awaited on that instead, with ``withTimeout(_:sourceLocation:_:)``.
///
/// `condition` is checked at once, then after pauses that grow from 1 ms to 50 ms, so a
/// condition that comes true soon is seen soon and one that takes long costs few checks. The
/// limit guards against hangs, and a passing test never waits for it. When it passes, this
/// records one `Issue` at `sourceLocation`, which quotes `comment`, and throws ``TimedOut``. An
/// error that `condition` throws ends the wait and is rethrown.
///
/// ```swift
/// await mailroom.post(Ping(id: 1))
/// try await waitUntil("the ping is counted") { counter.value == 1 }
/// ```
public func waitUntil(
    _ comment: Comment? = nil,
    within limit: Duration = .seconds(20),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @escaping @Sendable () async throws -> Bool
) async throws {
    let held = try await race(limit, at: sourceLocation) {
        var pause = Duration.milliseconds(1)
        while try await !condition() {
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
        return true
    }
    guard held == nil else { return }
    let what = comment.map { "\"\($0.rawValue)\"" } ?? "the condition"
    Issue.record("\(what) did not hold within \(limit)", sourceLocation: sourceLocation)
    throw TimedOut(limit: limit)
}
