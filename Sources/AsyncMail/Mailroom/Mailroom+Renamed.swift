// Calls renamed before 1.0. Each is unavailable with `renamed:`, so the compiler offers the new
// call as a fix-it, and the CHANGELOG's migration table lists it.
extension Mailroom {
    @available(*, unavailable, renamed: "tap(bufferingPolicy:where:)")
    public nonisolated(nonsending) func subscribeToAllMail(
        bufferingPolicy: AsyncStream<PostedMail>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> AsyncStream<PostedMail> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use tap(backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func subscribeToAllMail(
        backlogLimit: Int,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> BoundedStream<PostedMail> {
        fatalError("unavailable")
    }

    @available(*, unavailable, renamed: "subscriberCount(_:)")
    public nonisolated(nonsending) func subscriberCount<M: Mail>(for type: M.Type) async -> Int {
        fatalError("unavailable")
    }

    // Not `renamed:`: with `.everyone` the old call counted only every-sender subscriptions, and
    // the new one counts them all, so the fix-it must not make the change silently.
    @available(
        *,
        unavailable,
        message:
            "use subscriberCount(_:from:); note that from: .everyone now counts every subscription to the type, as leaving it out does"
    )
    public nonisolated(nonsending) func subscriberCount<M: Mail>(for type: M.Type, from senders: Senders) async -> Int {
        fatalError("unavailable")
    }

    @available(*, unavailable, renamed: "subscriberCount(_:fromAny:)")
    public nonisolated(nonsending) func subscriberCount<M: Mail, S: Sendable>(
        for type: M.Type,
        fromAny senderType: S.Type
    ) async -> Int {
        fatalError("unavailable")
    }

    // `backlogLimit: n` became `backlog: .ending(past: n)`, beside the backlogs that drop and tell
    // (#56). Not `renamed:`: the argument changes too, so the message spells the new call.

    @available(*, unavailable, message: "use subscribe(to:from:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use subscribe(to:fromAny:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<Envelope<M, S>> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use subscribe(to:from:after:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        after position: MailPosition?,
        backlogLimit: Int,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<BoundedStream<Positioned<M>>> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use subscribe(to:fromAny:after:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        after position: MailPosition?,
        backlogLimit: Int,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<BoundedStream<Positioned<Envelope<M, S>>>> {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use observe(_:from:owner:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func observe<M: Mail, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        owner: Owner,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use observe(_:fromAny:owner:backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        owner: Owner,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Envelope<M, S>) async -> Void
    ) async -> Observation {
        fatalError("unavailable")
    }

    @available(*, unavailable, message: "use tap(backlog: .ending(past: backlogLimit))")
    public nonisolated(nonsending) func tap(
        backlogLimit: Int,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> BoundedStream<PostedMail> {
        fatalError("unavailable")
    }
}
