/// A running owner-bound handler, returned by ``Mailroom/observe(_:owner:bufferingPolicy:startingWithLatest:where:handler:)``.
///
/// An observation ends by itself when its owner is deallocated, so you need not keep this:
/// discarding it does **not** stop the handler (unlike a `NotificationCenter` token). Keep it
/// when you want to stop earlier with ``cancel()``, or to recognise it later (it is `Hashable`).
public struct Observation: Sendable, Hashable {
    /// The task that runs the handler, one mail at a time.
    private let task: Task<Void, Never>

    /// Stops the observation: the handler is not called for any mail after this returns.
    /// A handler call already in progress finishes first.
    public func cancel() {
        task.cancel()
    }

    /// Returns once the handler loop has ended; lets tests await the real event.
    func waitUntilEnded() async {
        await task.value
    }

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool { task.isCancelled }

    /// Starts the loop that feeds `stream` to `handler` while `owner` is alive.
    ///
    /// Synchronous and nonisolated on purpose: the task then inherits no actor, so the loop
    /// does not hop onto the caller's actor for every mail (the handler's own isolation decides
    /// where it runs), while task-local values still flow into it.
    static func start<Element: Sendable, Owner: AnyObject & Sendable>(
        _ stream: AsyncStream<Element>,
        owner: Owner,
        handler: @escaping @Sendable (Owner, Element) async -> Void
    ) -> Observation {
        Observation(
            task: Task { [weak owner] in
                var mail = stream.makeAsyncIterator()
                while let element = await mail.next() {
                    // Cancelled or ownerless: stop before this mail, even if more is buffered.
                    guard !Task.isCancelled, let owner else { break }
                    await handler(owner, element)
                }
                // End the subscription now, not whenever the runtime releases this closure (which
                // holds the stream): a cancelled task's next() runs the stream's termination
                // handler synchronously, which removes the subscription.
                withUnsafeCurrentTask { $0?.cancel() }
                _ = await mail.next()
            }
        )
    }
}
