extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The first `count` elements, or fewer if the sequence ends first.
    ///
    /// Pair it with ``withTimeout(_:sourceLocation:_:)`` so that a sequence that never delivers
    /// fails the test instead of hanging it:
    ///
    /// ```swift
    /// let first = try await withTimeout { await pings.first(1) }
    /// ```
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
