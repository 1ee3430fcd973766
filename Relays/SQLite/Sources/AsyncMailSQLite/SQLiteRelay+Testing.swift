@_spi(AsyncMailInternal) import AsyncMail

extension SQLiteRelay {
    // Test-only hooks, all in this one file.

    /// The file the running relay writes, for tests that fill it or delete its rows; nil while
    /// it does not run.
    package var databaseForTesting: RelayDatabase? { state.withLock { $0.database } }

    /// The path of this relay's wake-up socket.
    package var socketPathForTesting: String {
        WakeUps.socketPath(beside: path, name: Self.socketName(origin: origin))
    }

    /// How many wake-ups the running relay's socket took.
    package var wakeUpsReceivedForTesting: Int { state.withLock { $0.wakeUps?.received ?? 0 } }

    /// Each new count of wake-ups the running relay's socket takes (the newest kept); nil while
    /// it does not run. One consumer.
    package var wakeUpCountsForTesting: AsyncStream<Int>? { state.withLock { $0.wakeUps?.receivedCounts } }

    /// Whether the caller runs on the thread that receives the running relay's wake-ups.
    package var isOnWakeUpThreadForTesting: Bool { state.withLock { $0.wakeUps?.isOnWakeUpThread ?? false } }
}
