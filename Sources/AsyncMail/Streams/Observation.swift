import Synchronization

/// A running owner-bound handler, returned by ``Mailroom/observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)``.
///
/// An observation ends by itself when its owner is deallocated or the mailroom closes, so you need
/// not keep this: discarding it does **not** stop the handler (unlike a `NotificationCenter`
/// token). Keep it to stop earlier with ``cancel()``, to await the end with ``waitUntilEnded()``,
/// or to recognise it later (it is `Hashable`).
///
/// ```swift
/// let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
///     await screen.show(ping)
/// }
/// observation.cancel()               // no handler call starts after this returns
/// await observation.waitUntilEnded()  // the subscription is gone and the loop has finished
/// ```
public struct Observation: Sendable, Hashable {
    /// The task that runs the handler, one mail at a time.
    private let task: Task<Void, Never>
    /// What `cancel()` and the loop share.
    private let control: Control

    /// The cancellation flag, the subscription that `cancel()` ends, and its backlog limit's end.
    private final class Control: Sendable {
        let cancelled = Atomic(false)
        let subscription: any Finishable
        /// Set for an observation with a backlog limit: says whether a post ended it.
        let endSignal: EndSignal?
        /// What the handler has finished with, for ``Observation/waitUntilHandled()``.
        let progress: ObservationProgress
        /// Called by the loop right after it takes a mail, before it moves to the handler's
        /// isolation; lets tests cancel at exactly that point.
        let afterTakingMail: (@Sendable () -> Void)?

        init(
            subscription: any Finishable,
            endSignal: EndSignal?,
            progress: ObservationProgress,
            afterTakingMail: (@Sendable () -> Void)?
        ) {
            self.subscription = subscription
            self.endSignal = endSignal
            self.progress = progress
            self.afterTakingMail = afterTakingMail
        }
    }

    /// Stops the observation: no handler call starts after this returns.
    ///
    /// The subscription is removed before this returns, and mail already buffered for the
    /// handler is dropped. A handler call already in progress is not interrupted: it runs to
    /// its end, and the task running it is not cancelled (`Task.isCancelled` stays false and a
    /// `Task.sleep` in it is not cut short). Calling it again does nothing.
    public func cancel() {
        control.cancelled.store(true, ordering: .sequentiallyConsistent)
        control.subscription.finish()
    }

    /// Whether ``cancel()`` has been called.
    ///
    /// An observation that ended by itself (its owner went away, or the mailroom closed) was not
    /// cancelled: this stays `false`. Use ``waitUntilEnded()`` to learn that it has ended.
    public var isCancelled: Bool { control.cancelled.load(ordering: .sequentiallyConsistent) }

    /// Whether a post ended the observation because its handler was its backlog's limit behind.
    ///
    /// Only an observation made with `backlog: .ending(past:)` can end this way; the post that ended it
    /// counted it in ``Receipt/ended``. Mail still buffered then is discarded, and no handler
    /// call starts after that post.
    public var exceededBacklogLimit: Bool { control.endSignal?.isExceeded ?? false }

    /// Returns once the handler has finished with every mail posted to this observation before
    /// the call, or the observation has ended.
    ///
    /// A post delivers before it returns, so this is the way to wait for the handler's effects
    /// of what you posted, without sleeping:
    ///
    /// ```swift
    /// await mailroom.post(Ping(id: 1))
    /// await observation.waitUntilHandled()  // the handler has run for Ping(id: 1)
    /// ```
    ///
    /// Mail that a dropping `bufferingPolicy` discarded is never handled: with one, this can wait
    /// until the observation ends. Like `Task.value`, it keeps waiting if the waiting task is
    /// cancelled.
    public func waitUntilHandled() async {
        await control.progress.waitUntilHandled()
    }

    /// The mails this observation's subscription accepted, and those its handler has finished
    /// with; for messages when a wait fails.
    package var progressCounts: (accepted: Int, handled: Int) { control.progress.counts }

    /// Returns once the observation has ended: cancelled, its owner gone, or the mailroom closed.
    ///
    /// When it returns the handler is not running and never will again, and the subscription has
    /// been removed. Like `Task.value`, it keeps waiting if the waiting task is cancelled.
    public func waitUntilEnded() async {
        await task.value
    }

    public static func == (lhs: Observation, rhs: Observation) -> Bool { lhs.task == rhs.task }
    public func hash(into hasher: inout Hasher) { hasher.combine(task) }

    /// Starts the loop that feeds `subscription`'s stream to `handler` while `owner` is alive.
    ///
    /// Synchronous and nonisolated on purpose: the task then inherits no actor, so the loop
    /// does not hop onto the caller's actor for every mail (the handler's own isolation decides
    /// where it runs), while task-local values still flow into it.
    static func start<Element: Sendable, Owner: AnyObject & Sendable>(
        _ subscription: RegisteredStream<Element>,
        endSignal: EndSignal? = nil,
        progress: ObservationProgress,
        owner: Owner,
        afterTakingMail: (@Sendable () -> Void)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Element) async -> Void
    ) -> Observation {
        start(
            ObservationFeed(subscription, endSignal: endSignal),
            progress: progress,
            owner: owner,
            afterTakingMail: afterTakingMail,
            handler: handler
        )
    }

    /// Starts the loop that feeds `feed`'s elements to `handler` while `owner` is alive.
    static func start<Element: Sendable, Owner: AnyObject & Sendable>(
        _ feed: ObservationFeed<Element>,
        progress: ObservationProgress,
        owner: Owner,
        afterTakingMail: (@Sendable () -> Void)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Element) async -> Void
    ) -> Observation {
        let control = Control(
            subscription: feed.subscription,
            endSignal: feed.endSignal,
            progress: progress,
            afterTakingMail: afterTakingMail
        )
        let (stream, contexts, weight, holding) = (feed.elements, feed.contexts, feed.weight, feed.holding)
        let task = Task { [weak owner] in
            for await element in stream {
                let context = contexts?.pop()
                control.afterTakingMail?()
                // Ownerless, or past the backlog limit: stop before this mail, even if more is buffered.
                guard let owner, control.endSignal?.isExceeded != true else { break }
                var called = false
                if let contexts, let context {
                    // The whole call, cancellation check included, inside the poster's context, so
                    // that the check and the call stay on the handler's isolation with no hop between.
                    await contexts.instrumentation.withContext(context) {
                        called = await call(handler, with: owner, element, on: handler.isolation, unless: control)
                    }
                } else {
                    called = await call(handler, with: owner, element, on: handler.isolation, unless: control)
                }
                guard called else { break }
                control.progress.handled(weight?(element) ?? 1)
            }
            // End the subscription now, not whenever the runtime releases this closure (which
            // holds the stream); after a cancel() or close() it has already ended.
            control.subscription.finish()
            _ = holding  // held until here
            control.progress.end()
        }
        return Observation(task: task, control: control)
    }

    /// Calls `handler` unless the observation was cancelled, checking on the handler's own
    /// isolation: a `cancel()` made there (on the main actor, say) either comes before the check
    /// or after the call has started, never in between. Returns false when cancelled.
    private static func call<Element: Sendable, Owner: AnyObject & Sendable>(
        _ handler: @isolated(any) @Sendable (Owner, Element) async -> Void,
        with owner: Owner,
        _ element: Element,
        on isolation: isolated (any Actor)?,
        unless control: Control
    ) async -> Bool {
        guard !control.cancelled.load(ordering: .sequentiallyConsistent) else { return false }
        await handler(owner, element)
        return true
    }

    private init(task: Task<Void, Never>, control: Control) {
        self.task = task
        self.control = control
    }
}
