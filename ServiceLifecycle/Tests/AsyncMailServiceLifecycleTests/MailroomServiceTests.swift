import AsyncMail
import AsyncMailServiceLifecycle
import AsyncMailTesting
import Logging
import ServiceLifecycle
import Testing

struct Line: Mail {
    let text: String
}

/// A server stand-in: one connection served from the mailroom until something ends it, and a
/// graceful shutdown it ignores, like a server waiting for a client that never leaves. As a
/// server does, it returns when its own shutdown comes, not when a connection ends: a service
/// that returned before its turn (the mailroom's close ends the connection at once) would be
/// reported by the group as finished unexpectedly, which on a loaded machine it sometimes was.
struct StalledConnectionService: Service {
    let inbox: BoundedStream<Line>
    let ended: AsyncStream<ConnectionEnd>.Continuation

    func run() async {
        let end = await inbox.serve { _ in
            let (never, _) = AsyncStream.makeStream(of: Void.self)
            for await _ in never {}
        } receiving: {
            let (never, _) = AsyncStream.makeStream(of: Void.self)
            for await _ in never {}
        }
        ended.yield(end)
        try? await gracefulShutdown()
    }
}

@Suite("MailroomService")
struct MailroomServiceTests {
    @Test("graceful shutdown closes the mailroom first, which ends a connection whose client stalled")
    func gracefulShutdownEndsConnections() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Line.self, backlog: .ending(past: 16))
        let (ends, ended) = AsyncStream.makeStream(of: ConnectionEnd.self)
        let group = ServiceGroup(
            configuration: .init(
                services: [StalledConnectionService(inbox: inbox, ended: ended), MailroomService(mailroom)],
                logger: Logger(label: "test")
            )
        )
        let running = Task { try await group.run() }
        #expect(await mailroom.post(Line(text: "hi")) == Receipt(delivered: 1))

        await group.triggerGracefulShutdown()
        try await withTimeout { try await running.value }
        let end = try await withTimeout { await ends.first { _ in true } }
        #expect(end?.code == .subscriptionEnded, "the connection ended with \(String(describing: end))")
        #expect(await mailroom.subscriberCount(Line.self) == 0)
        #expect(await mailroom.post(Line(text: "late")) == Receipt())
    }

    @Test("cancelling the group closes the mailroom too")
    func cancellationCloses() async throws {
        let mailroom = Mailroom()
        let lines = await mailroom.subscribe(to: Line.self)
        let group = ServiceGroup(
            configuration: .init(services: [MailroomService(mailroom)], logger: Logger(label: "test"))
        )
        let running = Task { try await group.run() }
        _ = await mailroom.post(Line(text: "before"))
        running.cancel()
        // The stream finishes, delivering what was buffered: the mailroom was closed.
        let received = try await withTimeout {
            var texts: [String] = []
            for await line in lines { texts.append(line.text) }
            return texts
        }
        #expect(received == ["before"])
        try? await running.value
    }
}
