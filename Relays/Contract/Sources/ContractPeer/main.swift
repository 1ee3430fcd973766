// One process of the relay contract's two-process tests, on either engine:
//
//   RELAY_ENGINE=sqlite RELAY_PLACE=/tmp/x/relay.sqlite ContractPeer talk 3
//   RELAY_ENGINE=postgres RELAY_PLACE=some_channel ContractPeer listen 3   (PGHOST, PGPORT, ...)
//
// `talk COUNT` posts COUNT lines to the lobby, flushes, prints "flushed" and waits to be killed.
// `listen COUNT` prints each lobby line it hears, and exits after COUNT.
// `resume COUNT [POSITION]` subscribes to the lobby with shared positions after POSITION (from
// the start when absent), prints "POSITION TEXT" for each line, and exits after COUNT.
// `present` tracks "peer" in the lobby's presence, prints "tracked" and waits to be killed; its
// relay beats every RELAY_HEARTBEAT_MS and has an expiry of RELAY_EXPIRY_MS.
// Each prints "listening" once its relay reads.
import AsyncMail
import AsyncMailPostgres
import AsyncMailSQLite
import ContractMail
import Foundation
import Logging

/// Writes a line at once, unbuffered even into a pipe: the tests read each line as it comes.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
let role = arguments.first ?? "listen"
let count = arguments.dropFirst().first.flatMap(Int.init) ?? 3
let environment = ProcessInfo.processInfo.environment
let place = environment["RELAY_PLACE"] ?? "contract_peer"
let shared = role == "resume"
let heartbeat = Duration.milliseconds(environment["RELAY_HEARTBEAT_MS"].flatMap(Int.init) ?? 1_000)
let presence = environment["RELAY_EXPIRY_MS"].flatMap(Int.init).map { RelayPresence(expiry: .milliseconds($0)) }

let mailroom = Mailroom()
await mailroom.retainHistory(ChatLine.self, count: 10_000)
let relay: any MailRelay
if environment["RELAY_ENGINE"] == "postgres" {
    let postgres = try PostgresRelay(
        mailroom: mailroom,
        connection: try PostgresRelay.connectionFromEnvironment(),
        configuration: .init(channel: try RelayChannel(place), heartbeatInterval: heartbeat, presence: presence)
    )
    try postgres.register(ChatLine.self, as: "chat.line", positions: shared ? .fleetWide : .local)
    relay = postgres
} else {
    let sqlite = try SQLiteRelay(
        mailroom: mailroom,
        path: place,
        configuration: .init(presence: presence, heartbeatInterval: heartbeat)
    )
    try sqlite.register(ChatLine.self, as: "chat.line", positions: shared ? .hostWide : .local)
    relay = sqlite
}
try relay.register(sender: RoomID.self, as: "room")

let lobby = RoomID(name: "lobby")
let events = relay.events()
let running = Task { try await relay.run() }
for await event in events where event.code == .listening { break }

switch role {
case "talk":
    for number in 1...count {
        await mailroom.post(ChatLine(text: "line \(number)"), from: lobby)
    }
    try await relay.flush()  // every line is stored: a SIGKILL from here on loses none
    say("flushed")
    while true { try await Task.sleep(for: .seconds(60)) }
case "present":
    try relay.track("peer", in: "lobby", meta: ["pid": "\(ProcessInfo.processInfo.processIdentifier)"])
    say("tracked")
    while true { try await Task.sleep(for: .seconds(60)) }
case "resume":
    let after = try arguments.dropFirst(2).first.map { try MailPosition(parsing: $0) }
    let resumption = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: after)
    if let gap = resumption.gap { say("gap \(gap)") }
    say("listening")
    var heard = 0
    for await positioned in resumption.mail {
        say("\(positioned.position) \(positioned.mail.text)")
        heard += 1
        if heard == count { break }
    }
default:
    let lines = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby))
    say("listening")
    var heard = 0
    for await line in lines {
        say(line.text)
        heard += 1
        if heard == count { break }
    }
}
running.cancel()
try? await running.value
