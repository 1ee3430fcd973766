import Foundation

/// Signs outgoing payloads and verifies incoming ones with a key the fleet shares.
///
/// A signed payload is the base64 of a 32-byte authentication code over the JSON, then the JSON.
/// The code itself is computed by the closures, so that this module needs no cryptography
/// library (the relay passes HMAC-SHA256 from swift-crypto; the fuzzer a stand-in).
@_spi(AsyncMailRelay) public struct PayloadSigner: Sendable {
    /// The length of the signature in front of the JSON: base64 of 32 bytes.
    @_spi(AsyncMailRelay) public static let signatureLength = 44

    /// The authentication code of `message`, 32 bytes.
    private let code: @Sendable (Data) -> Data
    /// Whether `code` authenticates `message`, compared in constant time.
    private let isValid: @Sendable (_ code: Data, _ message: Data) -> Bool

    @_spi(AsyncMailRelay) public init(
        code: @escaping @Sendable (Data) -> Data,
        isValid: @escaping @Sendable (_ code: Data, _ message: Data) -> Bool
    ) {
        self.code = code
        self.isValid = isValid
    }

    /// `json`, signed.
    @_spi(AsyncMailRelay) public func sign(_ json: String) -> String {
        code(Data(json.utf8)).base64EncodedString() + json
    }

    /// The JSON of a signed payload whose signature verifies; nil otherwise.
    @_spi(AsyncMailRelay) public func verified(_ payload: String) -> Substring? {
        let bytes = Array(payload.utf8)
        guard bytes.count > Self.signatureLength,
            let code = Data(base64Encoded: Data(bytes[..<Self.signatureLength])), code.count == 32
        else { return nil }
        let message = Data(bytes[Self.signatureLength...])
        guard isValid(code, message) else { return nil }
        return Substring(String(decoding: message, as: UTF8.self))
    }

    /// The JSON of a payload, whether or not it is signed: for recognising a relay's own
    /// payloads, which are never verified.
    @_spi(AsyncMailRelay) public static func unsigned(_ payload: String, signed: Bool) -> Substring.UTF8View {
        signed ? Substring(payload).utf8.dropFirst(signatureLength) : Substring(payload).utf8
    }
}
