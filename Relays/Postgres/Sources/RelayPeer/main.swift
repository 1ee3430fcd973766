// Two processes exchanging mail through PostgreSQL. Start one with `listen`, another with `talk`:
//
//   eval "$(Scripts/postgres.sh start)"
//   swift build --package-path Relays/Postgres --product RelayPeer   # once: two `swift run`s would collide
//   peer="$(swift build --package-path Relays/Postgres --show-bin-path)/RelayPeer"
//   "$peer" listen 3 &
//   "$peer" talk 3                                      # once the listener says "listening"
//
// The listener prints each line it hears and exits after COUNT; the talker posts COUNT lines to
// the lobby, flushes, prints "flushed" and exits (or, with RELAY_PEER_HANG=1, waits to be
// killed: the tests SIGKILL it there). Both read PGHOST, PGPORT, PGUSER, PGDATABASE.
//
// `offline COUNT` posts COUNT lines without waiting for the database, then prints its resident
// memory and the relay's counters: with PGPORT pointing where nothing listens, it shows that the
// outbound bound holds while the database is out of reach.
import AsyncMail
import AsyncMailPostgres
import Foundation
import Logging

struct ChatLine: Mail, Codable {
    let text: String
}

struct RoomID: Hashable, Sendable, Codable {
    let name: String
}

/// Writes a line at once, unbuffered even into a pipe: the tests read each line as it comes.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments.dropFirst()
let role = arguments.first ?? "listen"
let count = arguments.dropFirst().first.flatMap(Int.init) ?? 3
let environment = ProcessInfo.processInfo.environment

let mailroom = Mailroom()
let relay = try PostgresRelay(
    mailroom: mailroom,
    connection: try PostgresRelay.connectionFromEnvironment(),
    configuration: .init(channel: try RelayChannel(environment["RELAY_CHANNEL"] ?? "relay_peer"))
)
try relay.register(ChatLine.self, as: "chat.line")
try relay.register(sender: RoomID.self, as: "room")

let lobby = RoomID(name: "lobby")
let events = relay.events()
let running = Task { try await relay.run() }
if role == "offline" {
    for await event in events {
        if event.code == .disconnected { break }  // running, and the database out of reach
    }
} else {
    for await event in events {
        if event.code == .listening { break }
    }
    say("listening")  // a line the tests wait for
}

switch role {
case "offline":
    for number in 1...count { await mailroom.post(ChatLine(text: "line \(number)"), from: lobby) }
    // Until the relay has accounted for every post, queued or refused.
    while relay.counters.queued + relay.counters.queueOverflow < count { try await Task.sleep(for: .milliseconds(10)) }
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? "VmRSS: ?"
    let counters = relay.counters
    say(
        "\(count) posts, database out of reach: \(rss.split(separator: " ", omittingEmptySubsequences: true).dropFirst().joined(separator: " ")); queued \(counters.queued), queue overflow \(counters.queueOverflow) posts"
    )
case "talk":
    for number in 1...count {
        await mailroom.post(
            ChatLine(text: "line \(number) from \(ProcessInfo.processInfo.processIdentifier)"),
            from: lobby
        )
    }
    try await relay.flush()  // every line is committed: a SIGKILL from here on loses none
    say("flushed")
    if environment["RELAY_PEER_HANG"] == "1" {
        while true { try await Task.sleep(for: .seconds(60)) }
    }
default:
    var heard = 0
    for await line in await mailroom.subscribe(to: ChatLine.self, from: .only(lobby)) {
        say(line.text)
        heard += 1
        if heard == count { break }
    }
}
running.cancel()
try? await running.value
