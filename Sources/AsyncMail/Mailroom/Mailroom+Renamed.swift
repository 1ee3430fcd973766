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

    @available(*, unavailable, renamed: "tap(backlogLimit:where:)")
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
}
