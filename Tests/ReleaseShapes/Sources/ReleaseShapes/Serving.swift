import AsyncMail
import AsyncMailObservability
import AsyncMailServiceLifecycle
import Logging
import ServiceLifecycle

// A server's main as a user writes it: an observed mailroom run as a service, a connection served
// until the group shuts down, and the group's throwing `run()` awaited in a task.

/// Serves one subscription inside a service group, shuts the group down gracefully, and returns
/// how many lines the subscription read before the mailroom closed.
func serveUntilShutdown() async throws -> Int {
    let mailroom = Mailroom(instrumentation: MailroomObservability())
    let group = ServiceGroup(
        configuration: .init(services: [MailroomService(mailroom)], logger: Logger(label: "release-shapes"))
    )
    let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))
    let running = Task { try await group.run() }
    await mailroom.post(ChatLine(text: "hello"), from: RoomID(name: "lobby"))
    await group.triggerGracefulShutdown()
    var read = 0
    for await _ in inbox { read += 1 }  // ends when the service closes the mailroom
    try await running.value
    return read
}
