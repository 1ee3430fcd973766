// A server-style task group: one subscription per connection, and graceful shutdown with close().
import AsyncMail

struct ChatLine: Mail {
    let text: String
}

/// Stands in for a network connection: it records what it was sent.
actor Connection {
    let id: Int
    private(set) var sent: [String] = []
    init(id: Int) { self.id = id }
    func send(_ text: String) { sent.append(text) }
}

let mailroom = Mailroom()
let connections = (1...3).map(Connection.init(id:))

// Subscribe before serving: each subscription is live on return, so nothing below is missed.
var feeds: [(Connection, AsyncStream<ChatLine>)] = []
for connection in connections {
    feeds.append((connection, await mailroom.subscribe(to: ChatLine.self)))
}

let server = Task {
    await withTaskGroup(of: Void.self) { group in
        for (connection, lines) in feeds {
            group.addTask {
                for await line in lines { await connection.send(line.text) }
                // The loop ends when the mailroom closes (or the group is cancelled).
            }
        }
    }
}

await mailroom.post(contentsOf: [ChatLine(text: "hello"), ChatLine(text: "bye")])

// Graceful shutdown: every stream finishes after delivering what it holds; every loop ends.
await mailroom.close()
await server.value

for connection in connections {
    let sent = await connection.sent
    print("connection \(connection.id) sent:", sent)
    // snippet.hide
    precondition(sent == ["hello", "bye"])
    // snippet.show
}
