import Crypto
import Foundation
@_spi(AsyncMailRelay) import RelayWire

/// A secret every relay of a fleet shares, with which each signs what it publishes and
/// verifies what it receives (HMAC-SHA256).
///
/// `NOTIFY` and `LISTEN` carry no privileges in PostgreSQL: any role that may connect can read
/// and send notifications on any channel. With a key set
/// (the relay's `Configuration.authenticationKey`), a payload whose signature does not
/// verify is rejected, counted and reported (``RelayEvent/rejected(reason:)``), never delivered.
/// A key protects integrity, not secrecy: whoever can `LISTEN` still reads the mail.
///
/// ```swift
/// // 32 or more random bytes, from your secret store, the same in every process:
/// let key = try RelayKey(secretBytes)
/// ```
public struct RelayKey: Sendable {
    /// The key's bytes: `SymmetricKey` is not `Sendable` in every swift-crypto this accepts.
    private let bytes: [UInt8]

    /// A key of `bytes`, at least 32 of them.
    ///
    /// - Throws: ``RelayConfigurationError/keyTooShort(bytes:)``.
    public init(_ bytes: some Collection<UInt8>) throws(RelayConfigurationError) {
        guard bytes.count >= 32 else { throw .keyTooShort(bytes: bytes.count) }
        self.bytes = Array(bytes)
    }

    /// Signs and verifies payloads with this key.
    @_spi(AsyncMailRelay) public var signer: PayloadSigner {
        let bytes = self.bytes
        return PayloadSigner(
            code: { message in
                Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: bytes)))
            },
            isValid: { code, message in
                HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: message, using: SymmetricKey(data: bytes))
            }
        )
    }
}
