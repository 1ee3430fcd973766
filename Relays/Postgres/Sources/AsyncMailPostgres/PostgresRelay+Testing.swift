@_spi(AsyncMailRelay) import AsyncMailRelay
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// The tests' view of the tap: mails admitted at post time, handed to the forwarding loop,
    /// and given up. Lets a test prove that mail which cannot travel is never buffered.
    var tapCounts: (admitted: Int, forwarded: Int, lost: Int) { gate.counts }
    /// Posts waiting for room in the outbound queue (backpressure).
    var waitingPostsForTesting: Int { gate.machine.waiting.count }
}
