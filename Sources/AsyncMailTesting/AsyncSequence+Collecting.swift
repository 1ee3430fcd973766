import Testing

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The first `count` elements, or fewer if the sequence ends first; fails the test if they
    /// have not arrived within `limit`.
    ///
    /// It returns as soon as the `count`th element arrives: `limit` is a guard against a hang,
    /// never a wait (see ``withTimeout(_:sourceLocation:_:)``, which it uses). When the limit
    /// passes, it records one `Issue` at the caller's line and throws ``TimedOut``. An error the
    /// sequence throws, such as a bounded stream's `BacklogLimitExceeded`, is thrown as it is.
    ///
    /// ```swift
    /// let pings = await mailroom.subscribe(to: Ping.self)
    /// await mailroom.post(Ping(id: 1))
    /// #expect(try await pings.first(1) == [Ping(id: 1)])
    /// ```
    public func first(
        _ count: Int,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [Element] {
        try await withTimeout(limit, sourceLocation: sourceLocation) { try await self.untimedFirst(count) }
    }

    /// Every element until the sequence finishes; fails the test if it has not finished within
    /// `limit`, as ``first(_:within:sourceLocation:)`` does.
    ///
    /// ```swift
    /// await mailroom.close()
    /// #expect(try await pings.collect() == [])
    /// ```
    public func collect(
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [Element] {
        try await withTimeout(limit, sourceLocation: sourceLocation) { try await self.untimedCollect() }
    }

    /// The first `count` elements, with no time limit of its own: for a consumer task or a
    /// task-group child whose result a test awaits under `withTimeout`, the one hang guard.
    /// Anywhere else, ``first(_:within:sourceLocation:)`` is the call.
    package func untimedFirst(_ count: Int) async rethrows -> [Element] {
        var collected: [Element] = []
        guard count > 0 else { return collected }
        for try await element in self {
            collected.append(element)
            if collected.count == count { break }
        }
        return collected
    }

    /// Every element until the sequence finishes, with no time limit of its own (see
    /// ``untimedFirst(_:)``); anywhere else, ``collect(within:sourceLocation:)`` is the call.
    package func untimedCollect() async rethrows -> [Element] {
        var collected: [Element] = []
        for try await element in self { collected.append(element) }
        return collected
    }
}
