/// At most one log line per kind of event per second, so that a flood (a hostile sender's
/// rejected payloads, every post of an outage overflowing the queue) cannot flood the logs. The
/// events and counters still count every occurrence; the next line logged says how many lines
/// were left out.
struct LogThrottle: Sendable {
    private struct Window: Sendable {
        var opened: ContinuousClock.Instant
        var suppressed = 0
    }

    private var windows: [RelayEvent.Code: Window] = [:]
    private let interval: Duration

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether to log an event of `kind` now; if so, how many of its kind were left out before it.
    mutating func admit(_ kind: RelayEvent.Code, at now: ContinuousClock.Instant) -> Int? {
        if var window = windows[kind], now - window.opened < interval {
            window.suppressed += 1
            windows[kind] = window
            return nil
        }
        let suppressed = windows[kind]?.suppressed ?? 0
        windows[kind] = Window(opened: now)
        return suppressed
    }
}
