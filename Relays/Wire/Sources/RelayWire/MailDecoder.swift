import Foundation

/// Decodes envelopes, mails and senders from the wire's JSON text: what `JSONDecoder()` with its
/// default settings decodes, read in place instead of through a dictionary per object.
///
/// Foundation's decoder made a dictionary of every object's keys, for every mail; that was a
/// tenth of the relay's CPU per mail. This one parses the text once into a flat list of values
/// (``JSONTape``) and reads each value where it lies. It answers only what it can answer as
/// `JSONDecoder` would; for anything else (text it does not parse, an object with a key twice,
/// a `Float`, a `Decimal`, a number that is not a plain integer read as an integer, any throw),
/// it decodes the text again with a `JSONDecoder`, whose value or error is the answer. A value's
/// `init(from:)` may then run twice, so it must not have effects. Everything it is given is
/// untrusted: the relay's fuzz target (`Scripts/fuzz-relay.sh`) runs every payload through it.
///
/// Not thread-safe: the registry makes one for each payload.
@_spi(AsyncMailRelay) public final class MailDecoder {
    /// What each value's decoder carries in `userInfo`.
    @_spi(AsyncMailRelay) public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// How many texts this decoder handed to `JSONDecoder`.
    @_spi(AsyncMailRelay) public private(set) var fallbacks = 0

    @_spi(AsyncMailRelay) public init() {}

    /// Decodes `type` from the JSON text `text`, or throws `JSONDecoder`'s error.
    @_spi(AsyncMailRelay) public func decode<T: Decodable>(_ type: T.Type, from text: Substring) throws -> T {
        if let tape = JSONTape(text, userInfo: userInfo) {
            let value = try? TapeDecoder.decode(type, tape: tape, node: 0, path: .root)
            if let value, !tape.failed { return value }
        }
        fallbacks += 1
        let decoder = JSONDecoder()
        decoder.userInfo = userInfo
        return try decoder.decode(type, from: Data(text.utf8))
    }
}
