@_spi(AsyncMailInternal) import AsyncMail
import Foundation
import Synchronization

/// A running bridge from a `NotificationCenter` notification into a ``AsyncMail/Mailroom``.
///
/// Returned by ``AsyncMail/Mailroom/forward(_:object:in:as:)``. Forwarding goes on until
/// ``cancel()`` or the mailroom's `close()`, whether or not this handle is kept: discarding it
/// means "forward until the mailroom closes". The `NotificationCenter` observer is removed
/// before `cancel()` or `close()` returns: no notification posted afterwards is transformed. The
/// bridge holds its mailroom weakly, so a mailroom that nobody else keeps is freed (which closes
/// it and stops the bridge).
public struct NotificationForwarding: Sendable, Hashable {
    private let registration: Registration

    /// The observer while it is registered, and how to forget the mailroom's close action.
    ///
    /// The observer's block holds this strongly, so forwarding does not depend on anyone keeping
    /// the handle; ``stop()`` removes the observer, which breaks that cycle.
    final class Registration: Sendable {
        struct Live {
            // Not Sendable; made, kept and removed only under the mutex or after taking it out.
            var observer: (any NSObjectProtocol)?
            var forgetCloseAction: (@Sendable () -> Void)?
        }

        let center: NotificationCenter
        private let live = Locked(Live())
        /// Resolved by `stop()`, for the callers of `waitUntilEnded()`.
        private let stopped = OneShot<Void>()

        init(center: NotificationCenter) {
            self.center = center
        }

        /// Runs `body` holding the lock on `live`.
        func withLive<Result: Sendable>(_ body: (inout Live) -> Result) -> Result {
            live.withLock(body)
        }

        /// Whether the observer is still registered; checked before each transform.
        var isLive: Bool { withLive { $0.observer != nil } }

        /// Removes the observer, forgets the close action and resumes every waiter; idempotent.
        func stop() {
            let taken = withLive { live in
                defer { live = Live() }
                return (observer: live.observer.map(Unregistered.init), forget: live.forgetCloseAction)
            }
            if let observer = taken.observer { center.removeObserver(observer.token) }
            taken.forget?()
            stopped.resolve(())
        }

        /// Returns once ``stop()`` has run.
        func waitUntilStopped() async {
            await stopped.wait()
        }
    }

    /// An observer token on its way out of the mutex, to be removed and dropped right away.
    struct Unregistered: @unchecked Sendable {
        // Safe: the token is only handed to `removeObserver`, once, by the thread that took it out.
        let token: any NSObjectProtocol
    }

    /// Stops forwarding: the `NotificationCenter` observer is removed before this returns.
    ///
    /// Every notification posted before it was delivered when it was posted. Calling it again
    /// does nothing.
    public func cancel() {
        registration.stop()
    }

    /// Returns once the bridge has stopped: cancelled, or its mailroom closed or freed.
    public func waitUntilEnded() async {
        await registration.waitUntilStopped()
    }

    public static func == (lhs: NotificationForwarding, rhs: NotificationForwarding) -> Bool {
        lhs.registration === rhs.registration
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(registration))
    }

    init(registration: Registration) {
        self.registration = registration
    }
}

extension Mailroom {
    /// Forwards a `NotificationCenter` notification into this mailroom as typed mail.
    ///
    /// Each notification named `name` in `center` (optionally only from `object`) is passed to
    /// `transform` on the posting thread, with no lock held; what it returns is posted there and
    /// then, with ``AsyncMail/Mailroom/postSynchronously(_:)``, so bridged mail takes its place in
    /// the mailroom's one order at the moment the notification is posted, and `nil` is skipped.
    /// With `object`, the mail is posted from that object, so `subscribe(to:from: .only(object))`
    /// hears it; without, it has no sender (a notification's own `object` is not known to be
    /// `Sendable`). The bridge holds `object` weakly.
    /// Forwarding is live when this returns, even when called from a cancelled task. It goes on
    /// until the returned ``NotificationForwarding`` is cancelled or this mailroom closes (or is
    /// freed: the bridge does not keep it alive), whether or not the handle is kept; the
    /// observer is removed before `cancel()` or `close()` returns.
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
        in center: NotificationCenter = .default,
        as transform: @escaping @Sendable (Notification) -> M?
    ) async -> NotificationForwarding {
        let registration = NotificationForwarding.Registration(center: center)
        registration.withLive { live in
            // Strong: a discarded handle must not stop forwarding. `stop()` breaks the cycle.
            live.observer = center.addObserver(forName: name, object: object, queue: nil) {
                [weak self, weak object] note in
                guard let mailroom = self, registration.isLive, let mail = transform(note) else { return }
                if let object {
                    mailroom.postSynchronously(mail, from: object)
                } else {
                    mailroom.postSynchronously(mail)
                }
            }
        }
        if let closeAction = onClose({ registration.stop() }) {
            registration.withLive { live in
                live.forgetCloseAction = { [weak self] in self?.cancelCloseAction(closeAction) }
            }
        } else {
            registration.stop()  // already closed
        }
        return NotificationForwarding(registration: registration)
    }
}

extension Mailroom {
    @available(*, unavailable, renamed: "forward(_:object:in:as:)")
    public nonisolated(nonsending) func forward<M: Mail>(
        _ name: Notification.Name,
        object: (any AnyObject & Sendable)? = nil,
        from center: NotificationCenter,
        as transform: @escaping @Sendable (Notification) -> M?
    ) async -> NotificationForwarding {
        fatalError("unavailable")
    }
}
