import AsyncMail
import AsyncMailPostgres
import Foundation
import Testing

/// Posts `total` numbered lines at about `perSecond`, calling `during` with each number first.
func postPaced(
    _ total: Int,
    to mailroom: Mailroom,
    perSecond: Int,
    during: (Int) async throws -> Void
) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    for number in 0..<total {
        try await during(number)
        await mailroom.post(ChatLine(text: "\(number)"))
        if number % 10 == 9 {
            // Pacing the load, not waiting for an event: 10 mails per 10 ms.
            try await clock.sleep(until: start + .milliseconds((number + 1) * 1_000 / perSecond))
        }
    }
}

enum RelayPeer {
    /// The RelayPeer executable beside the test bundle, wherever SwiftPM built it (under
    /// `--scratch-path` too), or ASYNCMAIL_RELAY_PEER.
    static var path: String {
        if let path = ProcessInfo.processInfo.environment["ASYNCMAIL_RELAY_PEER"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().appendingPathComponent("RelayPeer").path
    }

    /// Starts RelayPeer with `arguments` on `channel`; returns it with the lines it prints.
    static func launch(
        _ arguments: [String],
        on channel: RelayChannel,
        environment extra: [String: String] = [:]
    ) throws -> (Process, AsyncStream<String>) {
        #expect(FileManager.default.isExecutableFile(atPath: path), "build RelayPeer first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["RELAY_CHANNEL"] = channel.name
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, lines(of: pipe))
    }
}
