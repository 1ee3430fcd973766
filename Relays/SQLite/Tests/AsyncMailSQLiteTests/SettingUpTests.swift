import AsyncMail
import AsyncMailSQLite
import Foundation
import Logging
import ServiceLifecycle
import Testing

// The Setting Up article's code, run as written: each of the article's blocks is a run of lines
// of this file (Scripts/check-doc-excerpts.py).
@Suite("The Setting Up article, as written")
struct SettingUpTests {
    struct ChatLine: Mail, Codable, Equatable {
        let text: String
    }

    struct RoomID: Hashable, Sendable, Codable {
        let name: String
    }

    @Test("every setting; the relay alone and in a service group; run() throws what stopped it")
    func settingUp() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/mail.sqlite"
            let mailroom = Mailroom()
            let logger = Logger(label: "setting-up")
            let configuration = SQLiteRelay.Configuration(
                retention: .seconds(3600),  // rows are kept an hour, then deleted
                maximumMailBytes: 1 << 20,  // a larger mail stays local, reported
                maximumPostBytes: 16 << 20,  // a larger batch stays local, reported
                outboundQueueLimit: 10_000,  // mails posted and not yet written
                backpressure: .wait(atMost: .seconds(5)),  // or .drop
                checkInterval: .seconds(1),  // lost wake-ups, a replaced file, the retention
                busyTimeout: .seconds(5),  // another process's write lock
                retryBackoff: .milliseconds(50) ... .seconds(5),  // a failed write or read, again
                authenticationKey: nil,  // or RelayKey(...): rows signed and checked
                metricsFactory: nil,  // MetricsSystem.factory
                presence: nil,  // or RelayPresence(...): track, untrack, presence(in:)
                heartbeatInterval: .seconds(1)  // presence only
            )
            let relay = try SQLiteRelay(mailroom: mailroom, path: path, configuration: configuration, logger: logger)
            try relay.register(ChatLine.self, as: "chat.line")
            try relay.register(sender: RoomID.self, as: "room")

            // Alone: run() in a task of its own; cancelling it stops the relay.
            let running = Task { try await relay.run() }
            for await event in relay.events() where event.code == .listening { break }  // reading
            await mailroom.post(ChatLine(text: "hello"), from: RoomID(name: "lobby"))
            try await relay.flush()  // committed to the file: a SIGKILL now loses nothing
            running.cancel()
            try await running.value  // returns once the file is closed
            #expect(relay.counters.published == 1)
            let again = try SQLiteRelay(mailroom: Mailroom(), path: path, configuration: configuration, logger: logger)
            try await inAGroup(again, path: path, logger: logger)
        }
    }

    /// The article's service group: the relay fails (its file is deleted under it), and the
    /// group's run() throws that error once the group has stopped.
    private func inAGroup(_ relay: SQLiteRelay, path: String, logger: Logger) async throws {
        let deleted = Task {
            for await event in relay.events() where event.code == .listening { break }
            try FileManager.default.removeItem(atPath: path)
        }
        var failure: RelayFileError?
        let group = ServiceGroup(services: [relay], logger: logger)
        do {
            try await group.run()  // until a graceful shutdown (SIGTERM, with signals set up)
        } catch let error as RelayFileError {
            // run() is where a relay's failures surface: here, its file was deleted under it.
            logger.critical("the relay stopped: \(error)")
            failure = error
        }
        try await deleted.value
        #expect(failure?.code == .replaced)
        let flushed = await #expect(throws: RelayError.self) { try await relay.flush() }
        #expect(flushed?.code == .notRunning)
    }
}
