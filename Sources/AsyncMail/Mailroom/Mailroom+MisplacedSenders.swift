// A `from:` takes `Senders` (`.everyone`, `.only(x)`). Two plausible mistakes would otherwise
// fail with "cannot convert value of type 'Player.Type' to expected argument type 'Senders'",
// which names neither fix: a sender type where `fromAny:` goes, and a bare sender where
// `.only(x)` goes. These overloads are the only candidates left for such calls, so the compiler
// shows their messages instead (checked word for word in Tests/CompileFailures).
extension Mailroom {
    // MARK: A sender type

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use subscribe(to:fromAny:) to hear every sender of a type"
    )
    public nonisolated(nonsending) func subscribe<M: Mail, S>(
        to type: M.Type,
        from senderType: S.Type,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> AsyncStream<M> {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use subscribe(to:fromAny:backlog:) to hear every sender of a type"
    )
    public nonisolated(nonsending) func subscribe<M: Mail, S, Stream>(
        to type: M.Type,
        from senderType: S.Type,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> Stream {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use observe(_:fromAny:owner:) to hear every sender of a type"
    )
    public nonisolated(nonsending) func observe<M: Mail, S, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from senderType: S.Type,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use observe(_:fromAny:owner:backlog:) to hear every sender of a type"
    )
    public nonisolated(nonsending) func observe<M: Mail, S, Owner: AnyObject & Sendable, Stream>(
        _ type: M.Type,
        from senderType: S.Type,
        owner: Owner,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Stream.Element) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use latest(_:fromAny:) for the newest mail of every sender of a type"
    )
    public nonisolated(nonsending) func latest<M: Mail, S>(_ type: M.Type, from senderType: S.Type) async -> M? {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use subscriberCount(_:fromAny:) to count the subscriptions to every sender of a type"
    )
    public nonisolated(nonsending) func subscriberCount<M: Mail, S>(
        _ type: M.Type,
        from senderType: S.Type
    ) async -> Int {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: use subscribe(to:fromAny:after:) to resume every sender of a type"
    )
    public nonisolated(nonsending) func subscribe<M: Mail, S>(
        to type: M.Type,
        from senderType: S.Type,
        after position: MailPosition?,
        bufferingPolicy: AsyncStream<Positioned<M>>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<AsyncStream<Positioned<M>>> {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use subscribe(to:fromAny:after:backlog:) to resume every sender of a type"
    )
    public nonisolated(nonsending) func subscribe<M: Mail, S, Stream>(
        to type: M.Type,
        from senderType: S.Type,
        after position: MailPosition?,
        backlog: Backlog<Positioned<M>, Stream>,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<Stream> {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use subscriberCounts(_:fromAny:) to watch the subscriptions to every sender of a type"
    )
    public nonisolated(nonsending) func subscriberCounts<M: Mail, S>(
        _ type: M.Type,
        from senderType: S.Type
    ) async -> AsyncStream<Int> {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender type is not a sender: use whileSubscribed(to:fromAny:) to run while someone hears every sender of a type"
    )
    public nonisolated(nonsending) func whileSubscribed<M: Mail, S>(
        to type: M.Type,
        from senderType: S.Type,
        stopAfter grace: Duration = .zero,
        run work: @escaping @Sendable () async -> Void
    ) async {
        fatalError("unavailable")
    }

    // MARK: A bare sender

    @available(*, unavailable, message: "name one sender with .only: subscribe(to:from: .only(sender))")
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        from sender: S,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> AsyncStream<M> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: subscribe(to:from: .only(sender), backlog:)")
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable, Stream>(
        to type: M.Type,
        from sender: S,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> Stream {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: observe(_:from: .only(sender), owner:)")
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from sender: S,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "name one sender with .only: observe(_:from: .only(sender), owner:backlog:)"
    )
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable, Stream>(
        _ type: M.Type,
        from sender: S,
        owner: Owner,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Stream.Element) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: latest(_:from: .only(sender))")
    public nonisolated(nonsending) func latest<M: Mail, S: Sendable>(_ type: M.Type, from sender: S) async -> M? {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: subscriberCount(_:from: .only(sender))")
    public nonisolated(nonsending) func subscriberCount<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S
    ) async -> Int {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: subscribe(to:from: .only(sender), after:)")
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        from sender: S,
        after position: MailPosition?,
        bufferingPolicy: AsyncStream<Positioned<M>>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<AsyncStream<Positioned<M>>> {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "name one sender with .only: subscribe(to:from: .only(sender), after:backlog:)"
    )
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable, Stream>(
        to type: M.Type,
        from sender: S,
        after position: MailPosition?,
        backlog: Backlog<Positioned<M>, Stream>,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<Stream> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: subscriberCounts(_:from: .only(sender))")
    public nonisolated(nonsending) func subscriberCounts<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S
    ) async -> AsyncStream<Int> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "name one sender with .only: whileSubscribed(to:from: .only(sender))")
    public nonisolated(nonsending) func whileSubscribed<M: Mail, S: Sendable>(
        to type: M.Type,
        from sender: S,
        stopAfter grace: Duration = .zero,
        run work: @escaping @Sendable () async -> Void
    ) async {
        fatalError("unavailable")
    }
}
