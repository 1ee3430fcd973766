extension ConnectionEnd {
    /// Runs one connection's ends side by side until the first ends: `ends` (the outbound loop,
    /// and anything that watches the subscription) and `receive` (the inbound loop). Then it
    /// finishes the subscription with `subscription`, cancels the other ends, waits for them, and
    /// says which ended first; ``Code/cancelled`` when the calling task was cancelled.
    ///
    /// What every stream's `serve(delivering:receiving:)` shares: only its outbound loop differs.
    static func first(
        of ends: [@Sendable () async -> ConnectionEnd],
        receiving receive: @escaping @Sendable () async throws -> Void,
        thenFinish subscription: any Finishable
    ) async -> ConnectionEnd {
        let first = await withTaskGroup(of: ConnectionEnd.self) { group in
            for end in ends { group.addTask { await end() } }
            group.addTask {
                do {
                    try await receive()
                    return ConnectionEnd(.inboundEnded)
                } catch {
                    return ConnectionEnd(.failed, error: error)
                }
            }
            let first = await group.next() ?? ConnectionEnd(.cancelled)
            subscription.finish()
            group.cancelAll()
            return first
        }
        return Task.isCancelled ? ConnectionEnd(.cancelled) : first
    }
}
