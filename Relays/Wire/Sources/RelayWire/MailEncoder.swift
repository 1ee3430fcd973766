import Foundation

/// Encodes mails and senders as JSON text for the wire: what `JSONEncoder()` with its default
/// settings writes, written straight into the caller's bytes.
///
/// Foundation's encoder builds a tree of every value, then writes it, and returns a new `Data`;
/// that was a tenth of the relay's CPU per mail. This one writes as the value encodes. What it
/// does not write as it goes (an `encode(to:)` that goes back to a container it left, encodes a
/// key twice, asks for a `superEncoder`, encodes nothing, or a value `JSONEncoder` refuses, such
/// as a NaN) it hands, whole, to a `JSONEncoder`, which writes it or throws what it always threw.
/// A value's `encode(to:)` may then run twice, so it must not have effects.
///
/// Output differs from `JSONEncoder`'s only in the order of an object's keys, which
/// `JSONEncoder` does not fix either: its objects are dictionaries. Data is Base64 text, a URL
/// its absolute string, a `Decimal` a number, a `Date` its `Double` of seconds since 2001,
/// `/` is escaped, and whole floating-point numbers lose their `.0`, as there.
///
/// Not thread-safe: each forwarding loop keeps one.
@_spi(AsyncMailRelay) public final class MailEncoder {
    private let sink = JSONSink()
    private let fallback = JSONEncoder()
    private var scratch: [UInt8] = []

    /// How many values this encoder handed to `JSONEncoder`.
    @_spi(AsyncMailRelay) public private(set) var fallbacks = 0

    @_spi(AsyncMailRelay) public init() {}

    /// Appends `value`'s JSON text to `bytes`; on a throw, `bytes` is as it was.
    @_spi(AsyncMailRelay) public func append<T: Encodable>(_ value: T, to bytes: inout [UInt8]) throws {
        let start = bytes.count
        swap(&sink.bytes, &bytes)
        defer { swap(&sink.bytes, &bytes) }
        if sink.write(value) { return }
        sink.bytes.removeSubrange(start...)
        fallbacks += 1
        sink.bytes.append(contentsOf: try fallback.encode(value))
    }

    /// `value`'s JSON text, in an array of its size: written in a buffer the encoder keeps, then
    /// copied once.
    @_spi(AsyncMailRelay) public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        scratch.removeAll(keepingCapacity: true)
        try append(value, to: &scratch)
        return Array(scratch)
    }
}
