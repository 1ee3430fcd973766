@_spi(AsyncMailInternal) import AsyncMail
import Foundation

/// One post of registered mail, encoded for the wire: one row in durable mode; in ephemeral mode
/// one notification, or a row and a notification carrying its id when it does not fit one.
@_spi(AsyncMailRelay) public struct OutboundPost: Sendable {
    @_spi(AsyncMailRelay) public let type: String
    @_spi(AsyncMailRelay) public let senderType: String?
    @_spi(AsyncMailRelay) public let sender: Data?
    /// The mails' JSON texts, one after another, separated by commas.
    @_spi(AsyncMailRelay) public private(set) var body: [UInt8]
    /// How many mails ``body`` holds.
    @_spi(AsyncMailRelay) public private(set) var mailCount: Int
    /// The encoded mails' bytes, added up.
    @_spi(AsyncMailRelay) public private(set) var mailBytes: Int
    /// The trace context injected for the post, as JSON text (see ``WireKey/trace``); nil for none.
    @_spi(AsyncMailRelay) public var trace: String?
    /// The context the post was made in, for the publish span's links.
    @_spi(AsyncMailRelay) public var context: PostContext = .none
    /// When the post entered the outbound queue, for the publish duration.
    @_spi(AsyncMailRelay) public var queuedAt: ContinuousClock.Instant?

    /// A post of one mail, whose JSON text is `mail`.
    @_spi(AsyncMailRelay) public init(type: String, senderType: String?, sender: Data?, mail: [UInt8]) {
        self.type = type
        self.senderType = senderType
        self.sender = sender
        self.body = mail
        self.mailCount = 1
        self.mailBytes = mail.count
    }

    /// A post of `mails`, each a JSON text.
    @_spi(AsyncMailRelay) public init(type: String, senderType: String?, sender: Data?, mails: [Data]) {
        self.type = type
        self.senderType = senderType
        self.sender = sender
        self.body = Array(mails.joined(separator: [UInt8(ascii: ",")]))
        self.mailCount = mails.count
        self.mailBytes = mails.reduce(0) { $0 + $1.count }
    }

    /// Appends the mails of `other`, the next post of the same type from the same sender.
    @_spi(AsyncMailRelay) public mutating func append(_ other: OutboundPost) {
        body.append(UInt8(ascii: ","))
        body.append(contentsOf: other.body)
        mailCount += other.mailCount
        mailBytes += other.mailBytes
    }

    /// Appends one more mail of the same type from the same sender, whose JSON text is `mail`.
    @_spi(AsyncMailRelay) public mutating func append(mail: [UInt8]) {
        body.append(UInt8(ascii: ","))
        body.append(contentsOf: mail)
        mailCount += 1
        mailBytes += mail.count
    }

    /// Whether `next` may travel in this post: the same type from the same sender, so that the
    /// receivers post the two as one batch, in the same order and with nothing in between, and the
    /// sum stays under `limit` bytes.
    @_spi(AsyncMailRelay) public func canAbsorb(_ next: OutboundPost, upTo limit: Int) -> Bool {
        type == next.type && senderType == next.senderType && sender == next.sender && trace == next.trace
            && mailBytes + next.mailBytes <= limit
    }

    /// The envelope as JSON text. Wire names and origins are validated to need no escaping, and
    /// `trace` was written by `JSONSerialization`. `sentAt` is milliseconds since 1970.
    @_spi(AsyncMailRelay) public func payload(
        origin: String,
        firstNumber: Int? = nil,
        sentAt: Int = OutboundPost.now()
    ) -> String {
        var json = Self.start(origin: origin)
        if let firstNumber { json += #","n":\#(firstNumber)"# }
        json += #","at":\#(sentAt)"#
        if let trace { json += #","x":"# + trace }
        json += #","t":""# + type + #"""#
        if let senderType, let sender {
            json += #","st":""# + senderType + #"","s":"# + String(decoding: sender, as: UTF8.self)
        }
        json += #","c":\#(mailCount),"m":["#
        json += String(decoding: body, as: UTF8.self)
        return json + "]}"
    }

    /// Ephemeral mode: the notification that stands for this post when it is kept in the table,
    /// as row `row`.
    ///
    /// Not signed: receivers trust nothing in it until they have read the row it names, verified
    /// that row's signature, and found the same origin, number and count there, so a signature
    /// here would add nothing.
    @_spi(AsyncMailRelay) public func spillNotice(origin: String, firstNumber: Int, row: Int64) -> String {
        Self.start(origin: origin) + #","n":\#(firstNumber),"c":\#(mailCount),"r":\#(row)}"#
    }

    /// The envelope's size without the mails, so that a mail can be sized before it is queued.
    @_spi(AsyncMailRelay) public var overheadBytes: Int {
        120 + PayloadSigner.signatureLength + type.utf8.count + (senderType?.utf8.count ?? 0) + (sender?.count ?? 0)
            + (trace?.utf8.count ?? 0)
    }

    /// The time now, in milliseconds since 1970: when a payload is written.
    @_spi(AsyncMailRelay) public static func now() -> Int {
        Int((Date().timeIntervalSince1970 * 1_000).rounded())
    }

    /// `carrier` as the JSON text of ``WireKey/trace``, or nil when it is empty or would not pass
    /// a receiver's ``WireLimits/isValidTrace(_:)`` (the post then travels without it).
    @_spi(AsyncMailRelay) public static func traceText(_ carrier: [String: String]) -> String? {
        guard !carrier.isEmpty, WireLimits.isValidTrace(carrier),
            let data = try? JSONSerialization.data(withJSONObject: carrier, options: [.sortedKeys])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A heartbeat: the number of the origin's last mail, so that receivers notice a lost tail.
    @_spi(AsyncMailRelay) public static func heartbeat(origin: String, last: Int) -> String {
        start(origin: origin) + #","h":\#(last)}"#
    }

    /// How every envelope from `origin` starts, so that a relay recognises its own payloads
    /// without decoding them.
    @_spi(AsyncMailRelay) public static func start(origin: String) -> String {
        #"{"o":""# + origin + #"""#
    }
}

/// The bounds every received envelope is checked against before anything in it is used.
///
/// Everything that arrives from the database is untrusted: any role that may connect can
/// `NOTIFY` on any channel, and a role with `INSERT` on the table can write any row.
@_spi(AsyncMailRelay) public enum WireLimits {
    /// The largest mail number an origin uses: 2^53 − 1, JSON's exact integers. An origin
    /// posting a million mails a second reaches it after 285 years, and sums of two numbers
    /// below it never overflow `Int`.
    @_spi(AsyncMailRelay) public static let maximumNumber = (1 << 53) - 1
    /// The longest origin id: relays use 36-character UUIDs.
    @_spi(AsyncMailRelay) public static let maximumOriginBytes = 64

    /// The most entries a trace context may have.
    @_spi(AsyncMailRelay) public static let maximumTraceEntries = 8
    /// The longest value in a trace context: W3C allows 512 bytes of `tracestate`.
    @_spi(AsyncMailRelay) public static let maximumTraceValueBytes = 512

    /// Whether `trace` is a trace context a receiver accepts: at most 8 entries, each key 1–64
    /// bytes of wire-name bytes, each value at most 512 bytes of printable ASCII. It is restored
    /// by whatever instrument the receiving process bootstrapped, so nothing else may reach it.
    @_spi(AsyncMailRelay) public static func isValidTrace(_ trace: [String: String]) -> Bool {
        trace.count <= maximumTraceEntries
            && trace.allSatisfy { key, value in
                (1...maximumOriginBytes).contains(key.utf8.count) && key.utf8.allSatisfy(isWireNameByte)
                    && value.utf8.count <= maximumTraceValueBytes
                    && value.utf8.allSatisfy { (0x20...0x7E).contains($0) }
            }
    }

    /// Whether `origin` could be a relay's origin id: 1–64 bytes of `A-Z a-z 0-9 . _ -`.
    @_spi(AsyncMailRelay) public static func isValidOrigin(_ origin: String) -> Bool {
        (1...maximumOriginBytes).contains(origin.utf8.count) && origin.utf8.allSatisfy(isWireNameByte)
    }

    /// The bytes of wire names and origins, which need no escaping in JSON or SQL.
    @_spi(AsyncMailRelay) public static func isWireNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}

/// What one received payload turned out to be.
@_spi(AsyncMailRelay) public enum InboundMessage: Sendable {
    /// An origin's last number; `last` is in `0...WireLimits.maximumNumber`.
    case heartbeat(origin: String, last: Int)
    /// A post of `count` mails numbered from `firstNumber` (absent only in payloads from before
    /// numbering); the numbers are in range and `count` matches the mails carried.
    case post(origin: String, firstNumber: Int?, count: Int, content: InboundContent)
    /// Ephemeral mode: a post too large for one notification, kept in the table's row `row`.
    /// Nothing in it is trusted until that row is read and matches.
    case spilled(origin: String, firstNumber: Int, count: Int, row: Int64)
    /// Not an envelope a relay sends: not JSON, the wrong shape, out-of-range numbers, a count
    /// that disagrees with its mails, or a signature that does not verify.
    case rejected(reason: String)
}

/// The decoded post, or why it could not be.
@_spi(AsyncMailRelay) public enum InboundContent: Sendable {
    case decoded(InboundPost, sender: (any Hashable & Sendable)?)
    case unknownType(String)
    case failed(type: String, reason: String)
}

extension CodingUserInfoKey {
    fileprivate static let wireRegistry = CodingUserInfoKey(rawValue: "AsyncMailPostgres.registry")!
}

/// An envelope's field that is invalid although it decoded; becomes ``InboundMessage/rejected(reason:)``.
private struct Invalid: Error, CustomStringConvertible {
    let description: String
}

/// Any JSON value, skipped: counts the mails of a type this process does not know.
private struct Skipped: Decodable {
    init(from decoder: any Decoder) throws {}
}

/// Decodes an envelope with the registry's codecs: the header always, the mails when their type
/// is known. Every number and count is checked before it is used.
private struct InboundEnvelope: Decodable {
    let message: InboundMessage

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: WireKey.self)
        let origin = try container.decode(String.self, forKey: .origin)
        guard WireLimits.isValidOrigin(origin) else { throw Invalid(description: "an invalid origin") }
        if let last = try container.decodeIfPresent(Int.self, forKey: .heartbeat) {
            guard (0...WireLimits.maximumNumber).contains(last) else {
                throw Invalid(description: "heartbeat number \(last) out of range")
            }
            message = .heartbeat(origin: origin, last: last)
            return
        }
        let number = try container.decodeIfPresent(Int.self, forKey: .number)
        let count = try container.decode(Int.self, forKey: .count)
        guard count >= 1 else { throw Invalid(description: "count \(count)") }
        if let number {
            // Both are checked first, so the sum cannot overflow.
            guard (1...WireLimits.maximumNumber).contains(number), count <= WireLimits.maximumNumber,
                number - 1 <= WireLimits.maximumNumber - count
            else { throw Invalid(description: "numbers \(number) + \(count) out of range") }
        }
        if let row = try container.decodeIfPresent(Int64.self, forKey: .row) {
            guard let number else { throw Invalid(description: "a spill notice without its number") }
            guard row >= 1 else { throw Invalid(description: "row \(row)") }
            message = .spilled(origin: origin, firstNumber: number, count: count, row: row)
            return
        }
        let trace = try container.decodeIfPresent([String: String].self, forKey: .trace) ?? [:]
        guard WireLimits.isValidTrace(trace) else { throw Invalid(description: "an invalid trace context") }
        let sentAt = try container.decodeIfPresent(Int.self, forKey: .sentAt)
        if let sentAt, !(0...WireLimits.maximumNumber).contains(sentAt) {
            throw Invalid(description: "sending time \(sentAt) out of range")
        }
        let type = try container.decode(String.self, forKey: .type)
        let registry = decoder.userInfo[.wireRegistry] as! WireRegistry  // always set by `decode` below
        guard let mailCodec = registry.mailCodec(named: type) else {
            try Self.requireMails(count, in: container)
            message = .post(origin: origin, firstNumber: number, count: count, content: .unknownType(type))
            return
        }
        let content: InboundContent
        do {
            var sender: (any Hashable & Sendable)?
            if let senderType = try container.decodeIfPresent(String.self, forKey: .senderType) {
                guard let senderCodec = registry.senderCodec(named: senderType) else {
                    try Self.requireMails(count, in: container)
                    message = .post(
                        origin: origin,
                        firstNumber: number,
                        count: count,
                        content: .unknownType(senderType)
                    )
                    return
                }
                sender = try senderCodec.decode(container)
            }
            var post = try mailCodec.decode(container)
            guard post.count == count else {
                throw Invalid(description: "count \(count) for \(counting(post.count, "mail"))")
            }
            post.trace = trace
            post.sentAt = sentAt
            content = .decoded(post, sender: sender)
        } catch let invalid as Invalid {
            throw invalid
        } catch {
            // The envelope is sound but its mails are not of the registered shape (a version
            // skew): reported as a decode failure of that type, with the header's count.
            try Self.requireMails(count, in: container)
            content = .failed(type: type, reason: String(describing: error))
        }
        message = .post(origin: origin, firstNumber: number, count: count, content: content)
    }

    /// Checks that the envelope carries exactly `count` mails, whatever their type: the header's
    /// count is what every counter adds, so it must be the real one.
    private static func requireMails(_ count: Int, in container: KeyedDecodingContainer<WireKey>) throws {
        let carried = try container.decode([Skipped].self, forKey: .mails).count
        guard carried == count else { throw Invalid(description: "count \(count) for \(counting(carried, "mail"))") }
    }
}

extension WireRegistry {
    /// Decodes one payload, verifying its signature first when `signer` is set; never throws: a
    /// bad payload is a message that says what was wrong with it.
    @_spi(AsyncMailRelay) public func decode(_ payload: String, signer: PayloadSigner?) -> InboundMessage {
        var json = Substring(payload)
        if let signer {
            guard let verified = signer.verified(payload) else {
                return .rejected(reason: "the signature does not verify")
            }
            json = verified
        }
        let decoder = MailDecoder()
        decoder.userInfo[.wireRegistry] = self
        do {
            return try decoder.decode(InboundEnvelope.self, from: json).message
        } catch let invalid as Invalid {
            return .rejected(reason: invalid.description)
        } catch {
            return .rejected(reason: "not an envelope: \(error)")
        }
    }

    /// Encodes one tapped post of registered mail, or returns nil when it stays local: its type is
    /// not registered, or its sender is an object (identity means nothing elsewhere) or of a type
    /// that is not registered.
    ///
    /// The post's next mails, of the same type from the same sender, need only their text:
    /// `codec.encode`, with `codec` returned here.
    @_spi(AsyncMailRelay) public func encode(
        _ posted: PostedMail,
        with encoder: MailEncoder
    ) throws -> (OutboundPost, codec: MailCodec)? {
        guard let mailCodec = mailCodec(for: posted.mailType) else { return nil }
        var senderType: String?
        var senderData: Data?
        if let sender = posted.sender {
            // Objects are never registered (a sender type is `Codable` and `Hashable` by value), so
            // mail from an object or actor stays local here too.
            guard let senderCodec = senderCodec(for: sender) else { return nil }
            senderData = try senderCodec.encode(sender, encoder)
            senderType = senderData == nil ? nil : senderCodec.name  // nil for a sender of `nil`
        }
        let mail = try mailCodec.encode(posted.mail, encoder)
        return (OutboundPost(type: mailCodec.name, senderType: senderType, sender: senderData, mail: mail), mailCodec)
    }

    /// Whether tapped mail could travel by the way `fleetWide` names: its type is registered with
    /// fleet-wide positions or without, as asked, and it has no sender or a sender of a registered
    /// type. Mail that never travels is never buffered for the relay.
    ///
    /// A type with fleet-wide positions travels only by the relay's route, which admits or refuses
    /// each post and counts what it refuses. Such a post reaches the tap only when the route refused
    /// it, or when no route runs; the tap must not take it then. Taking it would count a refusal
    /// twice, or send a row without the positions its type promises.
    @_spi(AsyncMailRelay) public func canRelay(_ posted: PostedMail, fleetWide: Bool) -> Bool {
        guard let codec = mailCodec(for: posted.mailType), codec.isFleetWide == fleetWide else { return false }
        guard let sender = posted.sender else { return true }
        return senderCodec(for: sender) != nil
    }
}
