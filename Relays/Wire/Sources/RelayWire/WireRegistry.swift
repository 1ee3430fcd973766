@_spi(AsyncMailInternal) import AsyncMail
import Foundation

/// The mail and sender types a relay carries, each under a stable wire name, with their codecs.
///
/// Wire names, not Swift type names, go over the wire, so renaming a Swift type never breaks a
/// running fleet. Types that are not registered stay local.
@_spi(AsyncMailRelay) public final class WireRegistry: Sendable {
    /// Why a registration was refused; the relay turns it into its public configuration error.
    @_spi(AsyncMailRelay) public enum RegistrationError: Error, Equatable {
        case invalidName(String)
        case wireNameTaken(String, by: String)
        case typeAlreadyRegistered(String, as: String)
        /// The same type and name again, but with the other kind of positions.
        case positionsDiffer(String)
    }

    /// How one registered mail type is encoded, and decoded into a post. A class: it is looked up
    /// for every mail, and copying seven closures cost more than encoding the mail.
    @_spi(AsyncMailRelay) public final class MailCodec: Sendable {
        @_spi(AsyncMailRelay) public let name: String
        @_spi(AsyncMailRelay) public let typeName: String
        /// One mail's JSON text, with the forwarding loop's encoder.
        @_spi(AsyncMailRelay) public let encode: @Sendable (any Mail, MailEncoder) throws -> [UInt8]
        /// Decodes the `m` array of an envelope into the post that delivers it locally.
        @_spi(AsyncMailRelay) public let decode: @Sendable (KeyedDecodingContainer<WireKey>) throws -> InboundPost
        /// Whether its positions are the relay table's, shared by the fleet: its posts are routed
        /// through the table (``route``) and delivered as they are read back.
        @_spi(AsyncMailRelay) public let isFleetWide: Bool
        /// Makes `mailroom` route the type's posts through a relay, or stops it (nil).
        @_spi(AsyncMailRelay) public let route: @Sendable (Mailroom, (@Sendable ([PostedMail]) -> Bool)?) -> Void
        /// The limits of the type's history in `mailroom`, if it keeps one.
        @_spi(AsyncMailRelay) public let historyLimits: @Sendable (Mailroom) -> (count: Int?, maxAge: Duration?)?
        /// Moves one room's history of the type in `mailroom` (the sender's; nil: mail with no
        /// sender) on to `first` in `epoch`: the table's newest position in the room, plus one,
        /// when no row says more (see `Mailroom._postPositioned`).
        @_spi(AsyncMailRelay) public let moveOn:
            @Sendable (Mailroom, (any Hashable & Sendable)?, _ epoch: UInt64, _ first: UInt64) -> Void

        init(
            name: String,
            typeName: String,
            encode: @escaping @Sendable (any Mail, MailEncoder) throws -> [UInt8],
            decode: @escaping @Sendable (KeyedDecodingContainer<WireKey>) throws -> InboundPost,
            isFleetWide: Bool,
            route: @escaping @Sendable (Mailroom, (@Sendable ([PostedMail]) -> Bool)?) -> Void,
            historyLimits: @escaping @Sendable (Mailroom) -> (count: Int?, maxAge: Duration?)?,
            moveOn: @escaping @Sendable (Mailroom, (any Hashable & Sendable)?, UInt64, UInt64) -> Void
        ) {
            self.name = name
            self.typeName = typeName
            self.encode = encode
            self.decode = decode
            self.isFleetWide = isFleetWide
            self.route = route
            self.historyLimits = historyLimits
            self.moveOn = moveOn
        }
    }

    /// How one registered sender type is encoded and decoded; a class, as ``MailCodec`` is.
    @_spi(AsyncMailRelay) public final class SenderCodec: Sendable {
        @_spi(AsyncMailRelay) public let name: String
        @_spi(AsyncMailRelay) public let typeName: String
        /// Nil for an `Optional` sender holding `nil`, which AsyncMail treats as no sender.
        @_spi(AsyncMailRelay) public let encode: @Sendable (any Sendable, MailEncoder) throws -> Data?
        @_spi(AsyncMailRelay) public let decode:
            @Sendable (KeyedDecodingContainer<WireKey>) throws -> any Hashable & Sendable

        init(
            name: String,
            typeName: String,
            encode: @escaping @Sendable (any Sendable, MailEncoder) throws -> Data?,
            decode: @escaping @Sendable (KeyedDecodingContainer<WireKey>) throws -> any Hashable & Sendable
        ) {
            self.name = name
            self.typeName = typeName
            self.encode = encode
            self.decode = decode
        }
    }

    private struct State {
        var mailByType: [ObjectIdentifier: MailCodec] = [:]
        var mailByName: [String: MailCodec] = [:]
        var senderByType: [ObjectIdentifier: SenderCodec] = [:]
        var senderByName: [String: SenderCodec] = [:]
    }

    private let state = Guarded(State())

    @_spi(AsyncMailRelay) public init() {}

    @_spi(AsyncMailRelay) public func register<M: Mail & Codable>(
        _ type: M.Type,
        as name: String,
        fleetWide: Bool = false
    ) throws(RegistrationError) {
        try Self.validate(name)
        let codec = MailCodec(
            name: name,
            typeName: String(reflecting: M.self),
            encode: { mail, encoder in try encoder.encode(mail as! M) },  // only called for M, by type identity
            decode: { container in
                let mails = try container.decode([M].self, forKey: .mails)
                var post = InboundPost(count: mails.count) { mailroom, sender in
                    if let sender {
                        await mailroom.post(contentsOf: mails, from: sender)
                    } else {
                        await mailroom.post(contentsOf: mails)
                    }
                }
                post.wireName = name
                post.isFleetWide = fleetWide
                post.postPositioned = { mailroom, sender, epoch, first, live in
                    mailroom._postPositioned(contentsOf: mails, from: sender, epoch: epoch, first: first, live: live)
                }
                return post
            },
            isFleetWide: fleetWide,
            route: { mailroom, route in mailroom._route(M.self, through: route) },
            historyLimits: { mailroom in mailroom._historyLimits(M.self) },
            moveOn: { mailroom, sender, epoch, first in
                mailroom._postPositioned(contentsOf: [M](), from: sender, epoch: epoch, first: first, live: true)
            }
        )
        // The lock's body cannot throw: it says what is wrong, and this throws it.
        let refused = state.withLock { (state: inout State) -> RegistrationError? in
            if let refused = Self.conflict(
                name,
                codec.typeName,
                nameOfType: state.mailByType[ObjectIdentifier(M.self)]?.name,
                typeOfName: state.mailByName[name]?.typeName
            ) {
                return refused
            }
            if let registered = state.mailByName[name], registered.isFleetWide != fleetWide {
                return .positionsDiffer(name)
            }
            state.mailByType[ObjectIdentifier(M.self)] = codec
            state.mailByName[name] = codec
            return nil
        }
        if let refused { throw refused }
    }

    @_spi(AsyncMailRelay) public func register<S: Hashable & Sendable & Codable>(
        sender type: S.Type,
        as name: String
    ) throws(RegistrationError) {
        try Self.validate(name)
        let codec = SenderCodec(
            name: name,
            typeName: String(reflecting: S.self),
            encode: { sender, encoder in
                // Only called for S or S?, by type identity: AsyncMail looks through an Optional.
                if let sender = sender as? S { return Data(try encoder.encode(sender)) }
                return try (sender as! S?).map { Data(try encoder.encode($0)) }
            },
            decode: { container in try container.decode(S.self, forKey: .sender) }
        )
        let refused = state.withLock { (state: inout State) -> RegistrationError? in
            if let refused = Self.conflict(
                name,
                codec.typeName,
                nameOfType: state.senderByType[ObjectIdentifier(S.self)]?.name,
                typeOfName: state.senderByName[name]?.typeName
            ) {
                return refused
            }
            state.senderByType[ObjectIdentifier(S.self)] = codec
            state.senderByType[ObjectIdentifier(S?.self)] = codec
            state.senderByName[name] = codec
            return nil
        }
        if let refused { throw refused }
    }

    @_spi(AsyncMailRelay) public func mailCodec(for type: any Mail.Type) -> MailCodec? {
        state.withLock { $0.mailByType[ObjectIdentifier(type)] }
    }

    /// Whether a post of the mail type `type` names, from `sender`, can travel: the type is
    /// registered, and so is the sender's type, if it has one. What a relay's backpressure asks
    /// before it makes a post wait; the tap asks the same of each mail (``canRelay(_:fleetWide:)``).
    @_spi(AsyncMailRelay) public func relays(_ type: ObjectIdentifier, from sender: (any Sendable)?) -> Bool {
        state.withLock { state in
            guard state.mailByType[type] != nil else { return false }
            guard let sender else { return true }
            return state.senderByType[ObjectIdentifier(Swift.type(of: sender))] != nil
        }
    }

    @_spi(AsyncMailRelay) public func mailCodec(named name: String) -> MailCodec? {
        state.withLock { $0.mailByName[name] }
    }

    /// The registered types whose positions are fleet-wide.
    @_spi(AsyncMailRelay) public var fleetWideCodecs: [MailCodec] {
        state.withLock { $0.mailByName.values.filter(\.isFleetWide).sorted { $0.name < $1.name } }
    }

    @_spi(AsyncMailRelay) public func senderCodec(for sender: any Sendable) -> SenderCodec? {
        state.withLock { $0.senderByType[ObjectIdentifier(type(of: sender))] }
    }

    @_spi(AsyncMailRelay) public func senderCodec(named name: String) -> SenderCodec? {
        state.withLock { $0.senderByName[name] }
    }

    private static func validate(_ name: String) throws(RegistrationError) {
        guard (1...100).contains(name.utf8.count), name.utf8.allSatisfy(WireLimits.isWireNameByte) else {
            throw .invalidName(name)
        }
    }

    /// Re-registering the same type under the same name is allowed; anything else is a clash,
    /// returned rather than thrown so that a registration under the lock can say it.
    private static func conflict(
        _ name: String,
        _ typeName: String,
        nameOfType: String?,
        typeOfName: String?
    ) -> RegistrationError? {
        if let nameOfType, nameOfType != name { return .typeAlreadyRegistered(typeName, as: nameOfType) }
        if let typeOfName, typeOfName != typeName { return .wireNameTaken(name, by: typeOfName) }
        return nil
    }
}

/// Received mail, decoded and ready to post into the local mailroom as one post.
@_spi(AsyncMailRelay) public struct InboundPost: Sendable {
    /// How many mails the post carries.
    @_spi(AsyncMailRelay) public let count: Int
    @_spi(AsyncMailRelay) public let post: @Sendable (Mailroom, (any Hashable & Sendable)?) async -> Receipt
    /// The trace context the publisher injected, validated by ``WireLimits/isValidTrace(_:)``;
    /// empty when it sent none.
    @_spi(AsyncMailRelay) public var trace: [String: String] = [:]
    /// When the publisher wrote it, in milliseconds since 1970 by the publisher's clock.
    @_spi(AsyncMailRelay) public var sentAt: Int?
    /// The mail type's wire name.
    @_spi(AsyncMailRelay) public var wireName = ""
    /// Whether this relay published it: a fleet-wide type's own mail, read back from the table.
    @_spi(AsyncMailRelay) public var isOwn = false
    /// Whether the type's positions are fleet-wide (see ``WireRegistry/MailCodec/isFleetWide``).
    @_spi(AsyncMailRelay) public var isFleetWide = false
    /// Posts it with the positions a relay's table gave: `first` and on, in `epoch`; with `live`
    /// false it is only kept in the type's history.
    @_spi(AsyncMailRelay) public var postPositioned:
        @Sendable (Mailroom, (any Hashable & Sendable)?, _ epoch: UInt64, _ first: UInt64, _ live: Bool) -> Receipt = {
            _,
            _,
            _,
            _,
            _ in Receipt()
        }

    @_spi(AsyncMailRelay) public init(
        count: Int,
        post: @escaping @Sendable (Mailroom, (any Hashable & Sendable)?) async -> Receipt
    ) {
        self.count = count
        self.post = post
    }
}

/// The keys of the JSON envelope that carries one post over the wire.
@_spi(AsyncMailRelay) public enum WireKey: String, CodingKey {
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
    /// The trace context the publishing process injected (W3C `traceparent` and `tracestate`, or
    /// whatever its instrument uses), as an object of strings; absent when it had none.
    case trace = "x"
    /// When the publisher wrote the post, in milliseconds since 1970, for the receive lag.
    case sentAt = "at"
}
