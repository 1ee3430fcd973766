import AsyncMail

// Runs every shape once and checks what it did: built in release, each must also behave.
let mailroom = Mailroom()
let room = RoomID(name: "lobby")
await mailroom.retainHistory(ChatLine.self, count: 100)
await mailroom.post(ChatLine(text: "first"), from: room)
let first = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: .oldestKept)
let position = await first.mail.first(where: { _ in true })!.position

let mangled = try await resumeWithHelper(in: room, after: "not-a-position", mailroom: mailroom)
precondition(mangled.reset, "a mangled position is a reset")
let resumed = try await resumeWithHelper(in: room, after: Substring(position.description), mailroom: mailroom)
precondition(!resumed.reset && resumed.0.start == position, "a real position resumes")
_ = try await resumeDirectly(in: room, after: "junk", mailroom: mailroom)

let results = try await resumeMany(["", position.description, "junk"], in: room, mailroom: mailroom)
precondition(results.count == 3)
guard case .failure(let reset) = results[2], reset.reason.contains("four parts") else {
    preconditionFailure("a mangled position is refused with its reason: \(results)")
}

let slow = try await resumeWithHelper(in: room, after: Substring(position.description), mailroom: mailroom)
let read = try await readUntilTooSlow(slow.0, mailroom: mailroom, room: room)
precondition(read == 3, "three lines posted, three read: \(read)")

let relayed = try await relayShapes()
precondition(relayed == [.notRunning, .notRunning], "flush before run() says the relay is not running: \(relayed)")
let served = try await serveUntilShutdown()
precondition(served == 1, "the line posted before the shutdown is read, then the stream ends: \(served)")
print("release shapes: every shape built and ran")
