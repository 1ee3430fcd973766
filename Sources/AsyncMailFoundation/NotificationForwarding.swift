import AsyncMail
import Foundation
import Synchronization

/// A running bridge from a `NotificationCenter` notification into a ``AsyncMail/Mailroom``.
///
/// Returned by ``AsyncMail/Mailroom/forward(_:object:from:as:)``. The `NotificationCenter`
/// observer is removed before ``cancel()`` or the mailroom's `close()` returns: no notification
/// posted afterwards is transformed. The bridge holds its mailroom weakly, so a mailroom that
/// nobody else keeps is freed (which closes it and stops the bridge).
public struct NotificationForwarding: Sendable, Hashable {
    /// The task that posts what the observer queued, in order.
    private let task: Task<Void, Never>
    private let registration: Registration

    /// The observer while it is registered, and how to forget the mailroom's close action.
    final class Registration: Sendable {
        struct Live {
            // Not Sendable; made, kept and removed only under the mutex or after taking it out.
            var observer: (any NSObjectProtocol)?
            var forgetCloseAction: (@Sendable () -> Void)?
        }

        let center: NotificationCenter
        private let live = Mutex(Live())
        /// ThreadSanitizer cannot see `Mutex` on Linux; this tells it about `live`'s lock.
        private let threadSanitizer = ThreadSanitizer.current
        /// Ends the queue, so the posting task drains what is queued and stops.
        let finishQueue: any Sendable & FinishableQueue

        init(center: NotificationCenter, finishQueue: any Sendable & FinishableQueue) {
            self.center = center
            self.finishQueue = finishQueue
        }

        /// Runs `body` holding the lock on `live`.
        func withLive<Result: Sendable>(_ body: (inout Live) -> Result) -> Result {
            live.withLock(annotating: threadSanitizer, as: self, body)
        }

        /// Whether the observer is still registered; checked before each transform.
        var isLive: Bool { withLive { $0.observer != nil } }

        /// Removes the observer, forgets the close action and ends the queue; idempotent.
        func stop() {
            let taken = withLive { live in
                defer { live = Live() }
                return (observer: live.observer.map(Unregistered.init), forget: live.forgetCloseAction)
            }
            guard let observer = taken.observer else { return }
            center.removeObserver(observer.token)
            taken.forget?()
            finishQueue.finish()
        }
    }

    /// An observer token on its way out of the mutex, to be removed and dropped right away.
    struct Unregistered: @unchecked Sendable {
        // Safe: the token is only handed to `removeObserver`, once, by the thread that took it out.
        let token: any NSObjectProtocol
    }

    /// Stops forwarding: the `NotificationCenter` observer is removed before this returns.
    ///
    /// Mail already transformed from earlier notifications is still posted, in order. Calling it
    /// again does nothing.
    public func cancel() {
        registration.stop()
    }

    /// Returns once the bridge has stopped and posted everything it had queued.
    public func waitUntilEnded() async {
        await task.value
    }

    public static func == (lhs: NotificationForwarding, rhs: NotificationForwarding) -> Bool {
        lhs.registration === rhs.registration
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(registration))
    }

    init(task: Task<Void, Never>, registration: Registration) {
        self.task = task
        self.registration = registration
    }
}

/// The end of a forwarding queue, whatever its mail type.
protocol FinishableQueue {
    func finish()
}

extension AsyncStream.Continuation: FinishableQueue {}

extension Mailroom {
    /// Forwards a `NotificationCenter` notification into this mailroom as typed mail.
    ///
    /// Each notification named `name` (optionally only from `object`) is passed to `transform`;
    /// what it returns is posted, in the order the notifications were posted, and `nil` is
    /// skipped. Forwarding is live when this returns, even when called from a cancelled task. It
    /// stops when the returned ``NotificationForwarding`` is cancelled or this mailroom closes
    /// (or is freed: the bridge does not keep it alive); the observer is removed before
    /// `cancel()` or `close()` returns. `transform` runs on the posting thread, with no lock held.
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
        // The observer block only enqueues, so forwarding keeps the notifications' order.
        let (queue, enqueue) = AsyncStream.makeStream(of: M.self)
        let registration = NotificationForwarding.Registration(center: center, finishQueue: enqueue)
        registration.withLive { live in
            live.observer = center.addObserver(forName: name, object: object, queue: nil) { [weak registration] note in
                guard let registration, registration.isLive, let mail = transform(note) else { return }
                enqueue.yield(mail)
            }
        }
        if let closeAction = onClose({ [weak registration] in registration?.stop() }) {
            registration.withLive { live in
                live.forgetCloseAction = { [weak self] in self?.cancelCloseAction(closeAction) }
            }
        } else {
            registration.stop()  // already closed
        }
        let task = Task { [weak self] in
            for await mail in queue {
                guard let mailroom = self else { break }
                await mailroom.post(mail)
            }
        }
        return NotificationForwarding(task: task, registration: registration)
    }
}
