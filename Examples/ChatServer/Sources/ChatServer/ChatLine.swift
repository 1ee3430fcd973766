import AsyncMail

/// One line of chat, posted from the room it was said in.
struct ChatLine: Mail, Codable {
    let text: String
}

/// A chat room's name, the sender every line of that room is posted from.
struct RoomID: Hashable, Sendable, Codable {
    let name: String
}
