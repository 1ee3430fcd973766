// Narrow a subscription to one sender: an object by identity, a Hashable value by equality,
// or every sender of a type, handed over with the mail.
import AsyncMail

struct Said: Mail {
    let text: String
}

struct RoomID: Hashable, Sendable {
    let name: String
}

final class Player: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

let mailroom = Mailroom()
let alice = Player(name: "alice")
let bob = Player(name: "bob")

let fromAlice = await mailroom.subscribe(to: Said.self, from: .only(alice))  // identity, held weakly
let inLobby = await mailroom.subscribe(to: Said.self, from: .only(RoomID(name: "lobby")))  // equality
let byAnyPlayer = await mailroom.subscribe(to: Said.self, fromAny: Player.self)  // envelopes

await mailroom.post(Said(text: "hi all"), from: alice)
await mailroom.post(Said(text: "hello"), from: bob)
await mailroom.post(Said(text: "welcome"), from: RoomID(name: "lobby"))
await mailroom.post(Said(text: "elsewhere"), from: RoomID(name: "kitchen"))

var aliceSaid: [String] = []
for await said in fromAlice {
    aliceSaid.append(said.text)
    break
}
var lobbyHeard: [String] = []
for await said in inLobby {
    lobbyHeard.append(said.text)
    break
}
var speakers: [String] = []
for await envelope in byAnyPlayer {
    speakers.append("\(envelope.sender.name): \(envelope.mail.text)")
    if speakers.count == 2 { break }
}
print("from alice:", aliceSaid)
print("in the lobby:", lobbyHeard)
print("any player:", speakers)
// snippet.hide
precondition(aliceSaid == ["hi all"])
precondition(lobbyHeard == ["welcome"])
precondition(speakers == ["alice: hi all", "bob: hello"])
// snippet.show
