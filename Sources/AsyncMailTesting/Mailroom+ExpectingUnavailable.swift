import AsyncMail

// The mail type without its `of:` label, as a newcomer writes it first, failed with two errors,
// one of them about a missing `where:`. These are the only candidates for that call, so the
// compiler shows their message alone (checked in Tests/CompileFailures).
extension Mailroom {
    @available(*, unavailable, message: "label the mail type: expectMail(of: OrderPlaced.self) { ... }")
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(20),
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "label the mail type: expectNoMail(of: OrderPlaced.self) { ... }")
    public nonisolated(nonsending) func expectNoMail<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        waiting window: Duration = .zero,
        during action: () async throws -> Void
    ) async rethrows {
        fatalError("unavailable")
    }
}
