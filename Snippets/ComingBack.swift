// A client that goes away and comes back: history, positions, and a resume with no gap and no
// duplicate, then a position too old for the history, reported first with its exact count.
import AsyncMail

struct ChatLine: Mail {
    let text: String
}

struct RoomID: Hashable, Sendable {
    let name: String
}

let mailroom = Mailroom()
let lobby = RoomID(name: "lobby")
await mailroom.retainHistory(ChatLine.self, count: 5)

// Connected: the client reads two lines and keeps the last position it saw, as a string.
let connected = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
await mailroom.post(ChatLine(text: "hello"), from: lobby)
await mailroom.post(ChatLine(text: "how are you?"), from: lobby)
var seen: [Positioned<ChatLine>] = []
for await line in connected.mail {
    seen.append(line)
    if seen.count == 2 { break }
}
let lastSeen = seen[1].position.description
print("the client keeps \(lastSeen)")

// Away: three lines it does not hear, one of them in another room.
await mailroom.post(ChatLine(text: "anyone?"), from: lobby)
await mailroom.post(ChatLine(text: "(elsewhere)"), from: RoomID(name: "hall"))
await mailroom.post(ChatLine(text: "still here"), from: lobby)

// Back: the position comes back as untrusted text, and the lobby's missed lines come first.
let position = try MailPosition(parsing: lastSeen)
let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: position)
precondition(resumed.gap == nil, "nothing it missed has been dropped")
await mailroom.post(ChatLine(text: "welcome back"), from: lobby)
var caughtUp: [String] = []
for await line in resumed.mail {
    caughtUp.append(line.mail.text)
    if caughtUp.count == 3 { break }
}
print("caught up:", caughtUp)
precondition(caughtUp == ["anyone?", "still here", "welcome back"])

// Much later: five more lines, and the history keeps five, so the old position is too old.
for index in 1...5 { await mailroom.post(ChatLine(text: "line \(index)"), from: lobby) }
let late = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: position)
print("too late:", late.gap.map(String.init(describing:)) ?? "no gap")
// Told first, with the count of the lobby's own: its mails 3 to 5 are no longer kept (history
// is per room, so the hall's line is not counted).
precondition(late.gap == HistoryGap(code: .expired, missed: 3))

// A forged or mangled position is refused with the reason, never a crash, and never read as "no position".
do {
    _ = try MailPosition(parsing: "0123-not-a-position")
    preconditionFailure("a mangled position reads back")
} catch let error as PositionError {
    print("refused:", error)
    precondition(error.code == .malformed)
}
await mailroom.close()
