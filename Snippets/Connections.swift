// One connection's whole life with serve(delivering:receiving:): whichever end ends first ends
// the other and removes the subscription; a client that stops reading is ended, not buffered for.
import AsyncMail

struct ChatLine: Mail {
    let text: String
}

struct RoomID: Hashable, Sendable {
    let name: String
}

let mailroom = Mailroom()
let lobby = RoomID(name: "lobby")

// Stand-ins for a WebSocket: what the client sends, and what the server writes to it.
let (fromClient, client) = AsyncStream.makeStream(of: String.self)
let (toClient, socket) = AsyncStream.makeStream(of: String.self)

// Subscribe first: live on return, so the client's own first line reaches it too.
let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .ending(past: 4_096))
let connection = Task {
    await inbox.serve { line in
        socket.yield(line.text)  // outbound: a socket write
    } receiving: {
        for await text in fromClient {  // inbound: the client's messages
            await mailroom.post(ChatLine(text: text), from: lobby)
        }
    }
}

client.yield("hello")
for await text in toClient {
    print("the client heard:", text)
    break
}

client.finish()  // the client leaves
let end = await connection.value
print("the connection ended:", end)
print("subscribers left in the lobby:", await mailroom.subscriberCount(ChatLine.self, from: .only(lobby)))
// snippet.hide
precondition(end.code == .inboundEnded, "ended with \(end)")
let leftInLobby = await mailroom.subscriberCount(ChatLine.self, from: .only(lobby))
precondition(leftInLobby == 0)
// snippet.show

// A client that stops reading: its socket write never returns. Past its backlog limit of 8 it
// is ended, even though the write is still stuck.
let stalledInbox = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .ending(past: 8))
let stalled = Task {
    await stalledInbox.serve { _ in
        for await _ in AsyncStream<Void>.makeStream().stream {}  // a write that never completes
    } receiving: {
        for await _ in AsyncStream<Void>.makeStream().stream {}  // and a client that sends nothing
    }
}
var total = Receipt()
for number in 1...10 { total += await mailroom.post(ChatLine(text: "line \(number)"), from: lobby) }
print("over 10 posts:", total)
print("the stalled connection ended:", await stalled.value)
// snippet.hide
precondition(total.ended == 1)
let stalledEnd = await stalled.value
precondition(stalledEnd.code == .backlogLimitExceeded, "not ended for its backlog")
let left = await mailroom.subscriberCount(ChatLine.self)
precondition(left == 0)
// snippet.show
