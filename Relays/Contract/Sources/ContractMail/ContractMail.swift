import AsyncMail

// The mail of the contract's tests and its peer process, in one module: a position names its
// mail type by the type's full name, so a test and its peer must share the type for a position
// given by one to resume in the other (as an application's processes share theirs).

/// A line of chat.
public struct ChatLine: Mail, Codable, Equatable {
    public let text: String

    public init(text: String) {
        self.text = text
    }
}

/// A room: a value sender.
public struct RoomID: Hashable, Sendable, Codable {
    public let name: String

    public init(name: String) {
        self.name = name
    }
}
