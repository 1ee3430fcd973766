import AsyncMail
import Foundation

/// A running bridge from a `NotificationCenter` notification into a ``AsyncMail/Mailroom``.
///
/// Returned by ``AsyncMail/Mailroom/forward(_:object:from:as:)``. The `NotificationCenter`
/// observer is removed when you call ``cancel()`` or when the mailroom closes.
public struct NotificationForwarding: Sendable, Hashable {
    /// The task that owns the observer and posts what it forwards, in order.
    private let task: Task<Void, Never>

    init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Stops forwarding and removes the `NotificationCenter` observer.
    public func cancel() {
        task.cancel()
    }

    /// Returns once the observer has been removed; lets tests await the real event.
    func waitUntilEnded() async {
        await task.value
    }
}

/// Ends with its mailroom: a subscription to it finishes when the mailroom closes.
private struct ForwardingLifeline: Mail {}

extension Mailroom {
    /// Forwards a `NotificationCenter` notification into this mailroom as typed mail.
    ///
    /// Each notification named `name` (optionally only from `object`) is passed to `transform`;
    /// what it returns is posted, in the order the notifications were posted, and `nil` is
    /// skipped. Forwarding is live when this returns. It stops, removing the observer, when
    /// the returned ``NotificationForwarding`` is cancelled or this mailroom is closed.
    ///
    /// ```swift
    /// struct Terminated: Mail { let pid: Int32 }
    ///
    /// let bridge = await mailroom.forward(.processTerminated) { note in
    ///     (note.userInfo?["pid"] as? Int32).map(Terminated.init(pid:))
    /// }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func forward<M: Mail>(
        _ name: Notification.Name,
        object: (any AnyObject & Sendable)? = nil,
        from center: NotificationCenter = .default,
        as transform: @escaping @Sendable (Notification) -> M?
    ) async -> NotificationForwarding {
        let lifeline = await subscribe(to: ForwardingLifeline.self)
        let (registered, reportRegistered) = AsyncStream.makeStream(of: Void.self)
        let task = Task { [self] in
            // The observer block only enqueues, so forwarding keeps the notifications' order.
            let (queue, enqueue) = AsyncStream.makeStream(of: M.self)
            // The token is not Sendable, so it is made, kept and removed inside this task.
            let observer = center.addObserver(forName: name, object: object, queue: nil) { note in
                if let mail = transform(note) { enqueue.yield(mail) }
            }
            reportRegistered.yield()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await mail in queue { await self.post(mail) }
                }
                group.addTask {
                    for await _ in lifeline {}  // finishes when the mailroom closes
                }
                await group.next()
                group.cancelAll()
            }
            center.removeObserver(observer)
            enqueue.finish()
        }
        for await _ in registered { break }
        return NotificationForwarding(task: task)
    }
}
