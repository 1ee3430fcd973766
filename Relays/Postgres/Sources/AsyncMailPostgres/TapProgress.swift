import Synchronization

/// How far the tap has got, so that a graceful shutdown forwards exactly what was posted before it.
final class TapProgress: Sendable {
    /// Mails the tap accepted, counted at post time.
    let tapped = Atomic(0)
    /// Mails the forwarding loop has handled.
    let forwarded = Atomic(0)
    /// Set at shutdown to `tapped`: the loop stops once `forwarded` reaches it. -1 until then.
    let target = Atomic(-1)
}
