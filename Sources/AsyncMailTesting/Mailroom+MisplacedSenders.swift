import AsyncMail
import Testing

// A `from:` takes `Senders` (`.everyone`, `.only(x)`). A sender type where `fromAny:` goes, or a
// bare sender where `.only(x)` goes, would otherwise fail with "cannot convert value of type
// 'Player.Type' to expected argument type 'Senders'", which names neither fix. These overloads
// are the only candidates left for such calls, so the compiler shows their messages instead, as
// the core's own do (checked word for word in Tests/CompileFailures).
extension Mailroom {
    // MARK: A sender type

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use expectMail(_:count:fromAny:) to expect mail from every sender of a type"
    )
    public nonisolated(nonsending) func expectMail<M: Mail, S>(
        _ type: M.Type,
        count: Int = 1,
        from senderType: S.Type,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use expectMail(_:fromAny:during:where:) to expect mail from every sender of a type"
    )
    public nonisolated(nonsending) func expectMail<M: Mail, S>(
        _ type: M.Type,
        from senderType: S.Type,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> M? {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use expectMail(_:count:fromAny:after:) to resume every sender of a type"
    )
    public nonisolated(nonsending) func expectMail<M: Mail, S>(
        _ type: M.Type,
        count: Int = 1,
        from senderType: S.Type,
        after position: MailPosition?,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async throws -> [Positioned<M>] {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use expectNoMail(_:fromAny:) to expect no mail from every sender of a type"
    )
    public nonisolated(nonsending) func expectNoMail<M: Mail, S>(
        _ type: M.Type,
        from senderType: S.Type,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use expectWork(_:fromAny:running:) for the work of whileSubscribed(to:fromAny:)"
    )
    public nonisolated(nonsending) func expectWork<M: Mail, S>(
        _ type: M.Type,
        from senderType: S.Type,
        running: Bool,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        fatalError("unavailable")
    }

    // MARK: A bare sender

    @available(*, unavailable, message: "name one sender with .only: expectMail(_:count:from: .only(sender))")
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        count: Int = 1,
        from sender: S,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: expectMail(_:from: .only(sender), during:where:)")
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> M? {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: expectMail(_:count:from: .only(sender), after:)")
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        count: Int = 1,
        from sender: S,
        after position: MailPosition?,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async throws -> [Positioned<M>] {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: expectNoMail(_:from: .only(sender))")
    public nonisolated(nonsending) func expectNoMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: expectWork(_:from: .only(sender), running:)")
    public nonisolated(nonsending) func expectWork<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S,
        running: Bool,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        fatalError("unavailable")
    }
}
