@_spi(AsyncMailInternal) import AsyncMail
import Testing

extension Observation {
    /// Waits until the handler has finished with every mail posted to this observation so far,
    /// recording an `Issue` at `sourceLocation` if it has not within `limit`.
    ///
    /// The issue says how many of the mails posted to the observation its handler had finished.
    /// A passing test never waits for the limit (see `Observation.waitUntilHandled()`).
    ///
    /// ```swift
    /// let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
    ///     await screen.show(ping.id)
    /// }
    /// await mailroom.post(Ping(id: 1))
    /// await observation.expectHandled()
    /// #expect(await screen.shown == [1])
    /// ```
    public func expectHandled(
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let handled: Bool? = try? await race(limit, at: sourceLocation) {
            await self.waitUntilHandled()
            return true
        }
        guard handled == nil else { return }
        let (accepted, finished) = progressCounts
        Issue.record(
            Comment(
                rawValue: "expected the observation to handle the \(counting(accepted, "mail")) posted to it within "
                    + "\(limit); it handled \(finished)"
            ),
            sourceLocation: sourceLocation
        )
    }
}
