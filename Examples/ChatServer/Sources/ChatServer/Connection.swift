import AsyncMail
import Foundation
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
    let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(room), backlog: .ending(past: slowLimit))
    // Each frame starts a trace; the mailroom runs each write inside the trace of its line, here
    // or, through the relay, on another instance.
    let end = await inbox.serve { line in
        try await withSpan("chat write", ofKind: .producer) { _ in
            try await outbound.write(.text(line.text))
        }
    } receiving: {
        try await receive(inbound, in: room, mailroom: mailroom)
    }
    try await finish(end, channel: channel, outbound: outbound)
}

/// Serves a connection that asked to keep up rather than be ended when slow (`?slow=drop`):
/// past `slowLimit` lines behind, its oldest lines are dropped, and it is sent `{"lost": N}` in
/// order, where they stood, before the next line. Every frame is JSON: `{"text": …}` for a line.
/// Lines received plus lines lost are every line posted to the room while it was connected.
func serveDroppingConnection(
    in room: RoomID,
    inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter,
    channel: any Channel,
    mailroom: Mailroom,
    slowLimit: Int
) async throws {
    let inbox = await mailroom.subscribe(
        to: ChatLine.self,
        from: .only(room),
        backlog: .droppingOldest(past: slowLimit)
    )
    let end = await inbox.serve { delivery in
        switch delivery {
        case .mail(let line): try await outbound.write(.text(TextFrame(text: line.text).json))
        case .lost(let loss): try await outbound.write(.text(LostFrame(lost: loss.count).json))
        }
    } receiving: {
        try await receive(inbound, in: room, mailroom: mailroom)
    }
    try await finish(end, channel: channel, outbound: outbound)
}

/// Serves a connection that asked for positions (`?after=POSITION`, `?after=` to start live, or
/// `?after=oldest` for every line the room keeps): first `{"start": POSITION}`, the position its
/// lines follow (so a client that hears nothing still has one to come back with), then the lines
/// it missed, then live lines, each sent as `{"position": …, "text": …}`.
///
/// A position the history cannot resume from (too old, from a restart, forged or mangled) gets one
/// `{"reset": {"missed": N}}` frame after the start (`N` the room's own lines missed, null when
/// unknown); then the connection goes on with what the room keeps, or live.
func serveResumingConnection(
    in room: RoomID,
    after text: Substring,
    inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter,
    channel: any Channel,
    mailroom: Mailroom,
    slowLimit: Int
) async throws {
    let (resumed, reset) = try await resume(in: room, after: text, mailroom: mailroom, slowLimit: slowLimit)
    if let start = resumed.start { try await outbound.write(.text(StartFrame(start: start.description).json)) }
    if let reset { try await outbound.write(.text(reset.json)) }
    let end = await resumed.mail.serve { line in
        try await withSpan("chat write", ofKind: .producer) { _ in
            try await outbound.write(
                .text(PositionedFrame(position: line.position.description, text: line.mail.text).json)
            )
        }
    } receiving: {
        try await receive(inbound, in: room, mailroom: mailroom)
    }
    try await finish(end, channel: channel, outbound: outbound)
}

/// Subscribes after the client's position, with the reset frame the client gets first when that
/// position cannot be resumed from (nil when it can). The position is the client's text,
/// untrusted: anything that is not one of this instance's positions is a reset, then live lines.
private func resume(
    in room: RoomID,
    after text: Substring,
    mailroom: Mailroom,
    slowLimit: Int
) async throws -> (Resumption<BoundedStream<Positioned<ChatLine>>>, reset: ResetFrame?) {
    func subscribe(after position: MailPosition?) async throws -> Resumption<BoundedStream<Positioned<ChatLine>>> {
        try await mailroom.subscribe(
            to: ChatLine.self,
            from: .only(room),
            after: position,
            backlog: .ending(past: slowLimit)
        )
    }
    guard !text.isEmpty else { return (try await subscribe(after: nil), nil) }  // `?after=`: live, no reset
    do {
        // One throwing parse: a mangled position is refused, never read as "no position".
        let position = text == "oldest" ? .oldestKept : try MailPosition(parsing: text)
        let resumed = try await subscribe(after: position)
        return (resumed, resumed.gap.map { ResetFrame(missed: $0.missed) })
    } catch let error as PositionError where error.code != .noHistory {
        // Mangled, another type's, or past the newest line (forged): live from here, after a reset.
        return (try await subscribe(after: nil), ResetFrame(missed: nil))
    }
}

/// Posts every text frame the client sends to its room, each starting a trace.
private func receive(_ inbound: WebSocketInboundStream, in room: RoomID, mailroom: Mailroom) async throws {
    for try await message in inbound.messages(maxSize: 1 << 16) {
        guard case .text(let text) = message else { continue }
        await withSpan("chat frame", context: .topLevel, ofKind: .consumer) { span in
            span.attributes["chat.room"] = room.name
            await mailroom.post(ChatLine(text: text), from: room)
        }
    }
}

/// Ends the connection as its end says.
private func finish(_ end: ConnectionEnd, channel: any Channel, outbound: WebSocketOutboundWriter) async throws {
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

/// The first frame a connection with `?after=` receives: the position its lines follow.
struct StartFrame: Encodable {
    let start: String
}

/// A line with its position, as a connection with `?after=` receives it.
struct PositionedFrame: Encodable {
    let position: String
    let text: String
}

/// A line, as a connection with `?slow=drop` receives it.
struct TextFrame: Encodable {
    let text: String
}

/// What a connection with `?slow=drop` is sent where lines were dropped: how many.
struct LostFrame: Encodable {
    let lost: Int
}

/// The one frame a connection gets when its position cannot be resumed from.
struct ResetFrame: Encodable {
    /// How many lines were missed; nil (sent as `null`) when that cannot be known.
    let missed: Int?

    private enum Keys: String, CodingKey { case reset, missed }

    func encode(to encoder: any Encoder) throws {
        var outer = encoder.container(keyedBy: Keys.self)
        var reset = outer.nestedContainer(keyedBy: Keys.self, forKey: .reset)
        try reset.encode(missed, forKey: .missed)  // `encode`, not `encodeIfPresent`: null when unknown
    }
}

extension Encodable {
    /// The value as one line of JSON.
    var json: String {
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
