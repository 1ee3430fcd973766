/// Waits before attempt `attempt` of something that failed: doubling from `bounds`' lower bound
/// to its upper, with jitter (a half to the whole of it), so that relays that failed together do
/// not retry together. False when the task was cancelled meanwhile.
@_spi(AsyncMailRelay)
public func backoff(attempt: Int, within bounds: ClosedRange<Duration>) async -> Bool {
    let capped = min(bounds.lowerBound * Double(1 << min(attempt, 16)), bounds.upperBound)
    do {
        try await Task.sleep(for: capped * Double.random(in: 0.5...1.0))
        return true
    } catch {
        return false
    }
}
