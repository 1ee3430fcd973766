@_spi(AsyncMailInternal) import AsyncMail
import AsyncMailRelay
import AsyncMailTesting
import Foundation
import Testing

extension ContractTests {
    @Test("a writer killed (SIGKILL) right after flush() returned: nothing lost", arguments: Engine.all)
    func killedWriterLosesNothing(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let here = Mailroom()
        try await start(engine.makeRelay(here, place, Settings()))
        let heard = await here.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))
        let (peer, lines) = try Peer.launch(["talk", "200"], at: place)
        defer { if peer.isRunning { peer.terminate() } }
        try await withTimeout {
            for await line in lines where line == "flushed" { return }
        }
        kill(peer.processIdentifier, SIGKILL)  // at once: what flush() confirmed must already be stored
        #expect(try await heard.first(200).map(\.text) == (1...200).map { "line \($0)" })
    }

    @Test(
        "a reader killed (SIGKILL) and started again resumes from its last position, nothing lost or repeated",
        arguments: Engine.all
    )
    func killedReaderResumes(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let lobby = RoomID(name: "lobby")
        let here = Mailroom()
        await here.retainHistory(ChatLine.self, count: 10_000)
        let relay = try engine.makeRelay(here, place, Settings(sharedPositions: true))
        try await start(relay)
        let positions = try await here.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
        for number in 0..<20 { await here.post(ChatLine(text: "\(number)"), from: lobby) }
        let posted = try await positions.mail.first(20)

        // The first reader, from the first line's position: it hears 1, 2, ... and is killed.
        let (first, firstLines) = try Peer.launch(["resume", "100", "\(posted[0].position)"], at: place)
        defer { if first.isRunning { first.terminate() } }
        let read = try await Peer.lines(5, of: firstLines).map { line in
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            return (position: parts[0], text: parts.count > 1 ? parts[1] : "")
        }
        kill(first.processIdentifier, SIGKILL)
        #expect(read.map(\.text) == ["1", "2", "3", "4", "5"])

        // Posted while no reader runs; then a new one resumes after the last position it printed.
        for number in 20..<30 { await here.post(ChatLine(text: "\(number)"), from: lobby) }
        try await relay.flush()
        let last = try #require(read.last?.position)
        let (second, secondLines) = try Peer.launch(["resume", "24", last], at: place)
        defer { if second.isRunning { second.terminate() } }
        let resumed = try await Peer.lines(24, of: secondLines)
        let texts = resumed.map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }
        #expect(!resumed.contains { $0.hasPrefix("gap") }, "\(resumed)")
        #expect(texts == (6..<30).map { "\($0)" }, "everything after the position, once each")
    }
}

/// The ContractPeer executable beside the test bundle, wherever SwiftPM built it.
enum Peer {
    static var path: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().appendingPathComponent("ContractPeer").path
    }

    /// The first `count` lines a peer prints after "listening" (a gap's line too).
    static func lines(_ count: Int, of output: AsyncStream<String>) async throws -> [String] {
        try await withTimeout {
            var lines: [String] = []
            for await line in output where line != "listening" {
                lines.append(line)
                if lines.count == count { break }
            }
            return lines
        }
    }

    /// Starts ContractPeer with `arguments` at `place`, with `environment` added; returns it with
    /// the lines it prints.
    static func launch(
        _ arguments: [String],
        at place: Place,
        adding environment: [String: String] = [:]
    ) throws -> (Process, AsyncStream<String>) {
        #expect(FileManager.default.isExecutableFile(atPath: path), "build ContractPeer first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(place.environment) { _, new in new }
            .merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, RelayTesting.lines(of: pipe))
    }
}
