/// Where a mail stands in its type's history: handed to a consumer with each mail, and handed
/// back to resume after it.
///
/// A position names its mailroom's *epoch* (a random number drawn when the mailroom first keeps
/// history, so a position from another mailroom or from before a restart is recognised), its
/// mail type, and the mail's sequence number in that type's history, which counts up from 1 in
/// the order every subscriber of the type saw. Positions of one type compare in that order;
/// positions of different types or epochs are ordered too (by epoch, then type), but that order
/// means nothing.
///
/// `description` is a string a server can hand to its client, and `init?(_:)` reads one back.
/// That string is **untrusted input**: anything but a position's own form is refused, and
/// ``init(parsing:)`` says why.
///
/// ```swift
/// let text = position.description          // "5f3a9c0d12e4b7a1-0c1d2e3f-42"
/// let back = MailPosition(text)            // the same position
/// #expect(MailPosition("not a position") == nil)
/// ```
public struct MailPosition: Sendable, Hashable, Comparable, LosslessStringConvertible {
    /// The mailroom's epoch.
    public let epoch: UInt64
    /// The mail type's digest: which history of the mailroom this position is in.
    public let stream: UInt32
    /// The mail's number in its type's history, from 1.
    public let sequence: UInt64

    /// A position from its parts; for tests and for storing positions in parts.
    public init(epoch: UInt64, stream: UInt32, sequence: UInt64) {
        self.epoch = epoch
        self.stream = stream
        self.sequence = sequence
    }

    /// The longest string a position has: 16 + 1 + 8 + 1 + 20 characters.
    public static let maximumLength = 46

    /// Reads a position from its string, or says why it is not one.
    ///
    /// The form is `EPOCH-STREAM-SEQUENCE`: 16 and 8 lowercase hexadecimal digits, then a decimal
    /// number from 1 to `UInt64.max` with no sign or leading zero. Nothing longer than
    /// ``maximumLength`` is read at all.
    public init(parsing text: some StringProtocol) throws(PositionError) {
        let utf8 = Array(text.utf8.prefix(Self.maximumLength + 1))
        guard utf8.count <= Self.maximumLength else { throw .malformed("longer than \(Self.maximumLength) bytes") }
        let parts = utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("not three parts separated by '-'") }
        guard parts[0].count == 16, let epoch = Self.hex(parts[0]) else {
            throw .malformed("the epoch is not 16 lowercase hexadecimal digits")
        }
        guard parts[1].count == 8, let stream = Self.hex(parts[1]) else {
            throw .malformed("the stream is not 8 lowercase hexadecimal digits")
        }
        guard let sequence = Self.decimal(parts[2]), sequence >= 1 else {
            throw .malformed("the sequence is not a number from 1 to \(UInt64.max) without leading zeros")
        }
        self.init(epoch: epoch, stream: UInt32(stream), sequence: sequence)
    }

    /// Reads a position from its string; nil for anything else (see ``init(parsing:)``).
    public init?(_ description: String) {
        guard let position = try? MailPosition(parsing: description) else { return nil }
        self = position
    }

    /// The position as a string a client can keep and hand back.
    public var description: String {
        Self.paddedHex(epoch, digits: 16) + "-" + Self.paddedHex(UInt64(stream), digits: 8) + "-" + String(sequence)
    }

    public static func < (lhs: MailPosition, rhs: MailPosition) -> Bool {
        (lhs.epoch, lhs.stream, lhs.sequence) < (rhs.epoch, rhs.stream, rhs.sequence)
    }

    private static func paddedHex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: digits - text.count) + text
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for byte in bytes {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)  // at most 16 digits: cannot overflow
        }
        return value
    }

    private static func decimal(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard let first = bytes.first, (1...20).contains(bytes.count), first != UInt8(ascii: "0") else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
