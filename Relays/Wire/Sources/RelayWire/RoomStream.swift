import AsyncMail
import Foundation

/// The key that numbers one room of a fleet-wide type in the relay's table: the row's `stream`
/// and the counter's, `WIRENAME/SENDERTYPE:SENDER` with the sender as its JSON, or `WIRENAME/`
/// for mail posted with no sender. Wire names have no `/` or `:`, so the parts never run into
/// each other.
///
/// Positions are per room (see `Mailroom.retainHistory`), so the table numbers each room on its
/// own: a busy room's posts never move a quiet room's numbers. A key read back from the table is
/// untrusted: ``sender(of:registry:)`` decodes it with the registry's codec, or throws.
@_spi(AsyncMailRelay) public enum RoomStream {
    /// The longest key read back: a sender within the wire's limits fits far below it.
    @_spi(AsyncMailRelay) public static let maximumBytes = 64 * 1024

    /// The key of the room a post is in.
    @_spi(AsyncMailRelay) public static func key(type: String, senderType: String?, sender: Data?) -> String {
        guard let senderType, let sender else { return type + "/" }
        return type + "/" + senderType + ":" + String(decoding: sender, as: UTF8.self)
    }

    /// The wire name a key numbers a room of; nil for a key that is not a room's (the channel's
    /// own counter, or one written by an older relay, which numbered whole types).
    @_spi(AsyncMailRelay) public static func wireName(of key: String) -> Substring? {
        guard key.utf8.count <= maximumBytes, let slash = key.firstIndex(of: "/") else { return nil }
        return key[..<slash]
    }

    /// The room's sender, decoded with the registry's codec for its type; nil for the room of
    /// mail with no sender. Throws for a key no relay writes, or a sender type not registered here.
    @_spi(AsyncMailRelay) public static func sender(
        of key: String,
        registry: WireRegistry
    ) throws -> (any Hashable & Sendable)? {
        guard key.utf8.count <= maximumBytes, let slash = key.firstIndex(of: "/") else {
            throw RoomStreamError(reason: "not a room's key")
        }
        let room = key[key.index(after: slash)...]
        guard !room.isEmpty else { return nil }
        guard let colon = room.firstIndex(of: ":") else { throw RoomStreamError(reason: "a room without its sender") }
        let senderType = String(room[..<colon])
        guard let codec = registry.senderCodec(named: senderType) else {
            throw RoomStreamError(reason: "sender type \(senderType) is not registered")
        }
        let decoder = JSONDecoder()
        decoder.userInfo[.roomSenderCodec] = codec
        let json = #"{"s":"# + room[room.index(after: colon)...] + "}"
        return try decoder.decode(RoomSender.self, from: Data(json.utf8)).sender
    }
}

/// Why a room's key read back from the table was refused.
@_spi(AsyncMailRelay) public struct RoomStreamError: Error, CustomStringConvertible {
    @_spi(AsyncMailRelay) public let reason: String
    @_spi(AsyncMailRelay) public var description: String { reason }
}

extension CodingUserInfoKey {
    fileprivate static let roomSenderCodec = CodingUserInfoKey(rawValue: "AsyncMailPostgres.roomSender")!
}

/// A room's sender, decoded as an envelope's is (its `s` key).
private struct RoomSender: Decodable {
    let sender: any Hashable & Sendable

    init(from decoder: any Decoder) throws {
        guard let codec = decoder.userInfo[.roomSenderCodec] as? WireRegistry.SenderCodec else {
            throw RoomStreamError(reason: "no codec")
        }
        sender = try codec.decode(try decoder.container(keyedBy: WireKey.self))
    }
}
