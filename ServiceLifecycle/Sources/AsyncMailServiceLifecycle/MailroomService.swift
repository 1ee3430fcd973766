import AsyncMail
import ServiceLifecycle

/// Runs a `Mailroom` as a swift-service-lifecycle `Service`: it closes the mailroom
/// when the service group shuts down.
///
/// Closing finishes every subscription: each `for await` loop over it ends after the mail already
/// buffered, and every `BoundedStream.serve(delivering:receiving:)` returns
/// a `ConnectionEnd` with code `.subscriptionEnded`, even one whose client stopped reading. Later
/// posts deliver nothing.
///
/// Order: a `ServiceGroup` shuts its services down in reverse order, one at a time. List this
/// service *after* the server whose connections read from the mailroom, so that it closes first
/// and the server's own graceful shutdown then finds its connections ending, instead of waiting
/// for clients that never leave. Cancellation (a second signal, or the group's
/// `maximumGracefulShutdownDuration`) closes the mailroom too.
///
/// ```swift
/// let serviceGroup = ServiceGroup(
///     configuration: .init(
///         services: [app, MailroomService(mailroom)],  // the mailroom closes first
///         gracefulShutdownSignals: [.sigterm, .sigint],
///         logger: logger
///     )
/// )
/// try await serviceGroup.run()
/// ```
public struct MailroomService: Service {
    /// The mailroom this service closes at shutdown.
    public let mailroom: Mailroom

    /// A service that closes `mailroom` when its group shuts down.
    public init(_ mailroom: Mailroom) {
        self.mailroom = mailroom
    }

    /// Waits for the group's graceful shutdown (or cancellation), then closes the mailroom.
    public func run() async {
        // Throws only when cancelled, which ends this service just the same.
        try? await gracefulShutdown()
        await mailroom.close()
    }
}
