extension WakeUps {
    // Test-only hooks, all in this one file.

    /// Unbinds without removing the file: what a process killed with `SIGKILL` leaves.
    func closeLeavingFile() async throws {
        await listener.close()
    }

    /// Whether the caller runs on the thread that receives this process's wake-ups, which the
    /// row feed's task prefers (``executor``).
    var isOnWakeUpThread: Bool { listener.isCurrentThread }
}
