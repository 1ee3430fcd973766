import AsyncMail
import Foundation
import Synchronization

/// The mail and sender types a relay carries, each under a stable wire name, with their codecs.
///
/// Wire names, not Swift type names, go over the wire, so renaming a Swift type never breaks a
/// running fleet. Types that are not registered stay local.
final class WireRegistry: Sendable {
    /// How one registered mail type is encoded, and decoded into a post.
    struct MailCodec: Sendable {
        let name: String
        let typeName: String
        /// Encodes one mail with the forwarding loop's encoder.
        let encode: @Sendable (any Mail, JSONEncoder) throws -> Data
        /// Decodes the `m` array of an envelope into the post that delivers it locally.
        let decode: @Sendable (KeyedDecodingContainer<WireKey>) throws -> InboundPost
    }

    /// How one registered sender type is encoded and decoded.
    struct SenderCodec: Sendable {
        let name: String
        let typeName: String
        /// Nil for an `Optional` sender holding `nil`, which AsyncMail treats as no sender.
        let encode: @Sendable (any Sendable, JSONEncoder) throws -> Data?
        let decode: @Sendable (KeyedDecodingContainer<WireKey>) throws -> any Sendable
    }

    private struct State {
        var mailByType: [ObjectIdentifier: MailCodec] = [:]
        var mailByName: [String: MailCodec] = [:]
        var senderByType: [ObjectIdentifier: SenderCodec] = [:]
        var senderByName: [String: SenderCodec] = [:]
    }

    private let state = Mutex(State())

    func register<M: Mail & Codable>(_ type: M.Type, as name: String) throws(RelayConfigurationError) {
        try Self.validate(name)
        let codec = MailCodec(
            name: name,
            typeName: String(reflecting: M.self),
            encode: { mail, encoder in try encoder.encode(mail as! M) },  // only called for M, by type identity
            decode: { container in
                let mails = try container.decode([M].self, forKey: .mails)
                return InboundPost(count: mails.count) { mailroom, sender in
                    if let sender {
                        await mailroom.post(contentsOf: mails, from: sender)
                    } else {
                        await mailroom.post(contentsOf: mails)
                    }
                }
            }
        )
        try state.withLock { (state: inout State) throws(RelayConfigurationError) in
            try Self.check(
                name,
                codec.typeName,
                nameOfType: state.mailByType[ObjectIdentifier(M.self)]?.name,
                typeOfName: state.mailByName[name]?.typeName
            )
            state.mailByType[ObjectIdentifier(M.self)] = codec
            state.mailByName[name] = codec
        }
    }

    func register<S: Hashable & Sendable & Codable>(
        sender type: S.Type,
        as name: String
    ) throws(RelayConfigurationError) {
        try Self.validate(name)
        let codec = SenderCodec(
            name: name,
            typeName: String(reflecting: S.self),
            encode: { sender, encoder in
                // Only called for S or S?, by type identity: AsyncMail looks through an Optional.
                if let sender = sender as? S { return try encoder.encode(sender) }
                return try (sender as! S?).map { try encoder.encode($0) }
            },
            decode: { container in try container.decode(S.self, forKey: .sender) }
        )
        try state.withLock { (state: inout State) throws(RelayConfigurationError) in
            try Self.check(
                name,
                codec.typeName,
                nameOfType: state.senderByType[ObjectIdentifier(S.self)]?.name,
                typeOfName: state.senderByName[name]?.typeName
            )
            state.senderByType[ObjectIdentifier(S.self)] = codec
            state.senderByType[ObjectIdentifier(S?.self)] = codec
            state.senderByName[name] = codec
        }
    }

    func mailCodec(for type: any Mail.Type) -> MailCodec? {
        state.withLock { $0.mailByType[ObjectIdentifier(type)] }
    }

    func mailCodec(named name: String) -> MailCodec? {
        state.withLock { $0.mailByName[name] }
    }

    func senderCodec(for sender: any Sendable) -> SenderCodec? {
        state.withLock { $0.senderByType[ObjectIdentifier(type(of: sender))] }
    }

    func senderCodec(named name: String) -> SenderCodec? {
        state.withLock { $0.senderByName[name] }
    }

    private static func validate(_ name: String) throws(RelayConfigurationError) {
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard allowed, (1...100).contains(name.utf8.count) else { throw .invalidWireName(name) }
    }

    /// Re-registering the same type under the same name is allowed; anything else is a clash.
    private static func check(
        _ name: String,
        _ typeName: String,
        nameOfType: String?,
        typeOfName: String?
    ) throws(RelayConfigurationError) {
        if let nameOfType, nameOfType != name { throw .typeAlreadyRegistered(typeName, as: nameOfType) }
        if let typeOfName, typeOfName != typeName { throw .wireNameTaken(name, by: typeOfName) }
    }
}

/// Received mail, decoded and ready to post into the local mailroom as one post.
struct InboundPost: Sendable {
    /// How many mails the post carries.
    let count: Int
    let post: @Sendable (Mailroom, (any Sendable)?) async -> Receipt

    init(count: Int, post: @escaping @Sendable (Mailroom, (any Sendable)?) async -> Receipt) {
        self.count = count
        self.post = post
    }
}

/// The keys of the JSON envelope that carries one post over the wire.
enum WireKey: String, CodingKey {
    /// The publishing relay's origin id.
    case origin = "o"
    /// The number of the first mail, counted per origin: ephemeral receivers count gaps with it,
    /// durable receivers drop a batch published again.
    case number = "n"
    /// Ephemeral mode, heartbeats: the number of the origin's last mail.
    case heartbeat = "h"
    /// The mail type's wire name.
    case type = "t"
    /// The sender type's wire name, when there is a sender.
    case senderType = "st"
    /// The sender, when there is one.
    case sender = "s"
    /// The number of mails in the post.
    case count = "c"
    /// The mails of the post, in order.
    case mails = "m"
    /// Ephemeral mode, a post kept in the table: the id of its row.
    case row = "r"
}
