import Foundation

/// One presence entry as a row of the presence table holds it: checked before it is used,
/// since anything that can write the table can write any row.
///
/// The checks a row passes: every column present and within its size, a topic, key and instance
/// of 1 or more bytes without NUL, metadata that is a JSON object of strings, and, with a key,
/// a signature over the channel, topic, key, instance and metadata that verifies.
@_spi(AsyncMailRelay) public struct PresenceRecord: Sendable, Hashable {
    /// The longest topic and key, in UTF-8 bytes.
    @_spi(AsyncMailRelay) public static let maximumNameBytes = 256
    /// The longest instance name: a relay's origin is a 36-character UUID.
    @_spi(AsyncMailRelay) public static let maximumInstanceBytes = 64
    /// The longest metadata, as JSON, in UTF-8 bytes.
    @_spi(AsyncMailRelay) public static let maximumMetaBytes = 4096
    /// The longest signature column: base64 of 32 bytes.
    @_spi(AsyncMailRelay) public static let maximumSignatureBytes = PayloadSigner.signatureLength

    @_spi(AsyncMailRelay) public let topic: String
    @_spi(AsyncMailRelay) public let key: String
    @_spi(AsyncMailRelay) public let instance: String
    @_spi(AsyncMailRelay) public let meta: [String: String]

    @_spi(AsyncMailRelay) public init(topic: String, key: String, instance: String, meta: [String: String]) {
        self.topic = topic
        self.key = key
        self.instance = instance
        self.meta = meta
    }

    /// Why `name` cannot be a topic or a key, or nil when it can.
    @_spi(AsyncMailRelay) public static func problem(with name: String, as role: String) -> String? {
        let bytes = name.utf8.count
        if bytes == 0 { return "an empty \(role)" }
        if bytes > maximumNameBytes { return "a \(role) of \(bytes) bytes, over \(maximumNameBytes)" }
        if name.utf8.contains(0) { return "a \(role) with a NUL character" }
        return nil
    }

    /// `meta` as the JSON stored in a row: keys sorted, so one entry always has one text.
    @_spi(AsyncMailRelay) public static func json(of meta: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a dictionary of strings cannot fail.
        return (try? encoder.encode(meta)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Why `meta` cannot be tracked, or nil when it can.
    @_spi(AsyncMailRelay) public static func problem(with meta: [String: String]) -> String? {
        let bytes = json(of: meta).utf8.count
        return bytes > maximumMetaBytes ? "metadata of \(bytes) bytes as JSON, over \(maximumMetaBytes)" : nil
    }

    /// What a row's signature covers. NUL separates the fields: no field can hold one.
    @_spi(AsyncMailRelay) public static func signedText(
        channel: String,
        topic: String,
        key: String,
        instance: String,
        meta: String
    )
        -> String
    {
        [channel, topic, key, instance, meta].joined(separator: "\u{0}")
    }

    /// The signature column of a row this instance writes: empty without a key.
    @_spi(AsyncMailRelay) public static func signature(
        channel: String,
        topic: String,
        key: String,
        instance: String,
        meta: String,
        signer: PayloadSigner?
    ) -> String {
        guard let signer else { return "" }
        let text = signedText(channel: channel, topic: topic, key: key, instance: instance, meta: meta)
        return String(signer.sign(text).utf8.prefix(PayloadSigner.signatureLength))!
    }

    /// A row's columns as read, each nil when the database did not send it (a column over its
    /// size is not transferred).
    @_spi(AsyncMailRelay) public struct Columns: Sendable {
        @_spi(AsyncMailRelay) public var topic: String?
        @_spi(AsyncMailRelay) public var key: String?
        @_spi(AsyncMailRelay) public var instance: String?
        @_spi(AsyncMailRelay) public var meta: String?
        @_spi(AsyncMailRelay) public var signature: String?

        @_spi(AsyncMailRelay) public init(
            topic: String?,
            key: String?,
            instance: String?,
            meta: String?,
            signature: String?
        ) {
            self.topic = topic
            self.key = key
            self.instance = instance
            self.meta = meta
            self.signature = signature
        }
    }

    /// The entry a row of `channel` holds, or why it is rejected.
    @_spi(AsyncMailRelay) public static func decode(
        _ columns: Columns,
        channel: String,
        signer: PayloadSigner?
    ) -> Result<PresenceRecord, Rejection> {
        guard let topic = columns.topic, let key = columns.key, let instance = columns.instance,
            let metaText = columns.meta, let signature = columns.signature
        else { return .failure(Rejection("a presence row with a column missing or over its size")) }
        if let problem = problem(with: topic, as: "topic") ?? problem(with: key, as: "key") {
            return .failure(Rejection("a presence row with \(problem)"))
        }
        if instance.isEmpty || instance.utf8.count > maximumInstanceBytes || instance.utf8.contains(0) {
            return .failure(
                Rejection("a presence row whose instance is empty, over \(maximumInstanceBytes) bytes or has NUL")
            )
        }
        guard metaText.utf8.count <= maximumMetaBytes, !metaText.utf8.contains(0) else {
            return .failure(Rejection("a presence row whose metadata is over \(maximumMetaBytes) bytes"))
        }
        if let signer {
            let text = signedText(channel: channel, topic: topic, key: key, instance: instance, meta: metaText)
            guard signature.utf8.count == PayloadSigner.signatureLength, signer.verified(signature + text) != nil
            else { return .failure(Rejection("a presence row whose signature does not verify")) }
        }
        guard let meta = try? JSONDecoder().decode([String: String].self, from: Data(metaText.utf8)) else {
            return .failure(Rejection("a presence row whose metadata is not a JSON object of strings"))
        }
        return .success(PresenceRecord(topic: topic, key: key, instance: instance, meta: meta))
    }

    /// Why a row was rejected, in words.
    @_spi(AsyncMailRelay) public struct Rejection: Error, Sendable, Hashable {
        @_spi(AsyncMailRelay) public let reason: String

        @_spi(AsyncMailRelay) public init(_ reason: String) {
            self.reason = reason
        }
    }
}
