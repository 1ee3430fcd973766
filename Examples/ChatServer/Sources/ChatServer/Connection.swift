import AsyncMail
import HummingbirdWebSocket
import NIOCore
import Tracing

/// Serves one WebSocket connection in `room` until either end ends.
///
/// Subscribes before serving, in this task: the client's own first line must reach it too.
func serveConnection(
    in room: RoomID,
    inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter,
    channel: any Channel,
    mailroom: Mailroom,
    slowLimit: Int
) async throws {
    let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(room), backlogLimit: slowLimit)
    // Each frame starts a trace; the mailroom runs each write inside the trace of its line, here
    // or, through the relay, on another instance.
    let end = await inbox.serve { line in
        try await withSpan("chat write", ofKind: .producer) { _ in
            try await outbound.write(.text(line.text))
        }
    } receiving: {
        for try await message in inbound.messages(maxSize: 1 << 16) {
            guard case .text(let text) = message else { continue }
            await withSpan("chat frame", context: .topLevel, ofKind: .consumer) { span in
                span.attributes["chat.room"] = room.name
                await mailroom.post(ChatLine(text: text), from: room)
            }
        }
    }
    switch end.code {
    case .inboundEnded, .failed:
        break  // the client has gone; Hummingbird completes the close
    default:
        // Backlog limit exceeded, subscription ended, cancelled, or a code added later. A client
        // that stopped reading would never take a close frame: its socket buffers are full. Drop
        // it. One that still reads is told why the server let it go.
        guard channel.isWritable else {
            try await channel.close()
            return
        }
        if end.code == .backlogLimitExceeded {
            try await outbound.close(.policyViolation, reason: "too slow")
        } else {
            try await outbound.close(.goingAway, reason: "server shutting down")
        }
    }
}
