import AsyncMail
import Foundation

/// One post of registered mail, encoded for the wire: one row in durable mode; in ephemeral mode
/// one notification, or a row and a notification carrying its id when it does not fit one.
struct OutboundPost: Sendable {
    let type: String
    let senderType: String?
    let sender: Data?
    private(set) var mails: [Data]
    /// The encoded mails' bytes, added up.
    private(set) var mailBytes: Int

    init(type: String, senderType: String?, sender: Data?, mails: [Data]) {
        self.type = type
        self.senderType = senderType
        self.sender = sender
        self.mails = mails
        self.mailBytes = mails.reduce(0) { $0 + $1.count }
    }

    /// Appends the mails of `other`, the next post of the same type from the same sender.
    mutating func append(_ other: OutboundPost) {
        mails.append(contentsOf: other.mails)
        mailBytes += other.mailBytes
    }

    /// Whether `next` may travel in this post: the same type from the same sender, so that the
    /// receivers post the two as one batch, in the same order and with nothing in between, and the
    /// sum stays under `limit` bytes.
    func canAbsorb(_ next: OutboundPost, upTo limit: Int) -> Bool {
        type == next.type && senderType == next.senderType && sender == next.sender
            && mailBytes + next.mailBytes <= limit
    }

    /// The envelope as JSON text. Wire names and origins are validated to need no escaping.
    func payload(origin: String, firstNumber: Int? = nil) -> String {
        var json = Self.start(origin: origin)
        if let firstNumber { json += #","n":\#(firstNumber)"# }
        json += #","t":""# + type + #"""#
        if let senderType, let sender {
            json += #","st":""# + senderType + #"","s":"# + String(decoding: sender, as: UTF8.self)
        }
        json += #","c":\#(mails.count),"m":["#
        json += mails.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",")
        return json + "]}"
    }

    /// Ephemeral mode: the notification that stands for this post when it is kept in the table,
    /// all but the row's id and the closing brace, which the publishing statement appends.
    func spillNotice(origin: String, firstNumber: Int) -> String {
        Self.start(origin: origin) + #","n":\#(firstNumber),"c":\#(mails.count),"r":"#
    }

    /// The envelope's size without the mails, so that a mail can be sized before it is queued.
    var overheadBytes: Int { 96 + type.utf8.count + (senderType?.utf8.count ?? 0) + (sender?.count ?? 0) }

    /// A heartbeat: the number of the origin's last mail, so that receivers notice a lost tail.
    static func heartbeat(origin: String, last: Int) -> String {
        start(origin: origin) + #","h":\#(last)}"#
    }

    /// How every envelope from `origin` starts, so that a relay recognises its own payloads
    /// without decoding them.
    static func start(origin: String) -> String {
        #"{"o":""# + origin + #"""#
    }
}

/// What one received payload turned out to be.
enum InboundMessage: Sendable {
    case heartbeat(origin: String, last: Int)
    case post(origin: String, firstNumber: Int?, count: Int, content: InboundContent)
    /// Ephemeral mode: a post too large for one notification, kept in the table's row `row`.
    case spilled(origin: String, firstNumber: Int, count: Int, row: Int64)
    case malformed(reason: String)
}

/// The decoded post, or why it could not be.
enum InboundContent: Sendable {
    case decoded(InboundPost, sender: (any Sendable)?)
    case unknownType(String)
    case failed(type: String, reason: String)
}

extension CodingUserInfoKey {
    fileprivate static let wireRegistry = CodingUserInfoKey(rawValue: "AsyncMailPostgres.registry")!
}

/// Decodes an envelope with the registry's codecs: the header always, the mails when their type is known.
private struct Envelope: Decodable {
    let message: InboundMessage

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: WireKey.self)
        let origin = try container.decode(String.self, forKey: .origin)
        if let last = try container.decodeIfPresent(Int.self, forKey: .heartbeat) {
            message = .heartbeat(origin: origin, last: last)
            return
        }
        let number = try container.decodeIfPresent(Int.self, forKey: .number)
        let count = try container.decode(Int.self, forKey: .count)
        if let row = try container.decodeIfPresent(Int64.self, forKey: .row) {
            guard let number else {
                throw DecodingError.keyNotFound(
                    WireKey.number,
                    .init(codingPath: [], debugDescription: "a spill notice without its number")
                )
            }
            message = .spilled(origin: origin, firstNumber: number, count: count, row: row)
            return
        }
        let type = try container.decode(String.self, forKey: .type)
        let registry = decoder.userInfo[.wireRegistry] as! WireRegistry  // always set by `decode` below
        guard let mailCodec = registry.mailCodec(named: type) else {
            message = .post(origin: origin, firstNumber: number, count: count, content: .unknownType(type))
            return
        }
        do {
            var sender: (any Sendable)?
            if let senderType = try container.decodeIfPresent(String.self, forKey: .senderType) {
                guard let senderCodec = registry.senderCodec(named: senderType) else {
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
            let post = try mailCodec.decode(container)
            message = .post(origin: origin, firstNumber: number, count: count, content: .decoded(post, sender: sender))
        } catch {
            message = .post(
                origin: origin,
                firstNumber: number,
                count: count,
                content: .failed(type: type, reason: String(describing: error))
            )
        }
    }
}

extension WireRegistry {
    /// Decodes one payload; never throws: a bad payload is a message that says so.
    func decode(_ payload: String) -> InboundMessage {
        let decoder = JSONDecoder()
        decoder.userInfo[.wireRegistry] = self
        do {
            return try decoder.decode(Envelope.self, from: Data(payload.utf8)).message
        } catch {
            return .malformed(reason: String(describing: error))
        }
    }

    /// Encodes one tapped post of registered mail, or returns nil when it stays local: its type is
    /// not registered, or its sender is an object (identity means nothing elsewhere) or of a type
    /// that is not registered.
    func encode(_ posted: PostedMail, with encoder: JSONEncoder) throws -> (OutboundPost, bytes: Int)? {
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
        return (
            OutboundPost(type: mailCodec.name, senderType: senderType, sender: senderData, mails: [mail]), mail.count
        )
    }
}
