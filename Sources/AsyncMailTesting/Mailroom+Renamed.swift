import AsyncMail
import Testing

// Calls renamed before 1.0: the mail type is the first, unlabelled argument, as in `observe` and
// `latest`. Each old form is unavailable, so the compiler names the new call (checked word for
// word in Tests/CompileFailures), and the CHANGELOG's migration table lists it.
extension Mailroom {
    @available(
        *,
        unavailable,
        message: "the mail type comes first, unlabelled: expectMail(OrderPlaced.self, count: 2) { ... }"
    )
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ count: Int = 1,
        of type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "the mail type comes first, unlabelled: expectMail(Score.self, count: 2, fromAny: Player.self) { ... }"
    )
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ count: Int = 1,
        of type: M.Type,
        fromAny senderType: S.Type,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        fatalError("unavailable")
    }

    @available(*, unavailable, renamed: "expectMail(_:from:within:sourceLocation:during:where:)")
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        of type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> M? {
        fatalError("unavailable")
    }

    @available(*, unavailable, renamed: "expectNoMail(_:from:waiting:sourceLocation:during:)")
    public nonisolated(nonsending) func expectNoMail<M: Mail>(
        of type: M.Type,
        from senders: Senders = .everyone,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        fatalError("unavailable")
    }

    @available(*, unavailable, renamed: "expectNoMail(_:fromAny:waiting:sourceLocation:during:)")
    public nonisolated(nonsending) func expectNoMail<M: Mail, S: Sendable>(
        of type: M.Type,
        fromAny senderType: S.Type,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        fatalError("unavailable")
    }
}
