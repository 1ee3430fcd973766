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
}
