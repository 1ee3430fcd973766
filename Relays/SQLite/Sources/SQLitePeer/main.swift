// Two processes exchanging mail through one SQLite file, with no server. Start one with `listen`,
// another with `talk`:
//
//   swift build --package-path Relays/SQLite --product SQLitePeer   # once: two `swift run`s would collide
//   peer="$(swift build --package-path Relays/SQLite --show-bin-path)/SQLitePeer"
//   "$peer" listen 3 &
//   "$peer" talk 3                                      # once the listener says "listening"
//
// The listener prints each line it hears and exits after COUNT; the talker posts COUNT lines to
// the lobby, flushes, prints "flushed" and exits. Both open RELAY_PATH (default
// /tmp/asyncmail-peer.sqlite, created readable by its owner only).
import AsyncMail
import AsyncMailSQLite
import Foundation

struct ChatLine: Mail, Codable {
    let text: String
}

struct RoomID: Hashable, Sendable, Codable {
    let name: String
}

/// Writes a line at once, unbuffered even into a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments.dropFirst()
let role = arguments.first ?? "listen"
let count = arguments.dropFirst().first.flatMap(Int.init) ?? 3
let path = ProcessInfo.processInfo.environment["RELAY_PATH"] ?? "/tmp/asyncmail-peer.sqlite"

let mailroom = Mailroom()
let relay = try SQLiteRelay(mailroom: mailroom, path: path)
try relay.register(ChatLine.self, as: "chat.line")
try relay.register(sender: RoomID.self, as: "room")

let lobby = RoomID(name: "lobby")
let events = relay.events()
let running = Task { try await relay.run() }
for await event in events where event.code == .listening { break }

switch role {
case "talk":
    for number in 1...count {
        await mailroom.post(
            ChatLine(text: "line \(number) from \(ProcessInfo.processInfo.processIdentifier)"),
            from: lobby
        )
    }
    try await relay.flush()  // every line is in the file: a SIGKILL from here on loses none
    say("flushed")
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
