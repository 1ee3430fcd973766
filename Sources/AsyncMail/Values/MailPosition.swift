/// Where a mail stands in its room's history: handed to a consumer with each mail, and handed
/// back to resume after it.
///
/// History is kept per room (each sender value or object, and mail posted with no sender), so a
/// position names its *epoch* (a random number drawn when the mailroom first keeps history, or
/// the one a relay's table gave the room, so a position from another mailroom or from before a
/// restart is recognised), its mail type, its room, and the mail's sequence number in that room,
/// which counts up from 1 in the order every subscriber of the room saw. Sequence 0 stands
/// before the room's first mail: the position a subscription to a room nothing was posted to
/// starts at. While a relay shares a type's positions, that start in a room its store has not
/// numbered yet has epoch 0: the room's beginning, the same in every process, so it resumes
/// anywhere with every mail posted to the room since. Positions of one room compare in that order; positions of different rooms, types
/// or epochs are ordered too, but that order means nothing.
///
/// `description` is a string a server can hand to its client, and ``init(parsing:)`` reads one
/// back. That string is **untrusted input**: anything but a position's own form is refused with
/// ``PositionError/Code/malformed`` and the reason, never read as "no position". There is no
/// failable `init?(_:)`, so a mangled position cannot turn into `nil`, which `after:` reads as
/// "start live", without the caller writing so.
///
/// ```swift
/// let text = position.description                  // "5f3a9c0d12e4b7a1-0c1d2e3f-9a8b7c6d-42"
/// let back = try MailPosition(parsing: text)       // the same position
/// #expect(throws: PositionError.self) { try MailPosition(parsing: "not a position") }
/// ```
public struct MailPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The mailroom's epoch.
    public let epoch: UInt64
    /// The mail type's digest: which type's history this position is in.
    public let stream: UInt32
    /// The room's digest: which room of the type this position is in (a hash of the sender, stable
    /// across processes for a value sender).
    public let room: UInt32
    /// The mail's number in its room, from 1; 0 before the room's first mail.
    public let sequence: UInt64

    /// A position from its parts; for tests and for storing positions in parts.
    public init(epoch: UInt64, stream: UInt32, room: UInt32, sequence: UInt64) {
        self.epoch = epoch
        self.stream = stream
        self.room = room
        self.sequence = sequence
    }

    /// Whether this is a room's beginning in a relay's shared numbering: epoch 0 and sequence 0,
    /// with a room's stream and room (``oldestKept`` is epoch 0 with nothing else).
    var isRoomBeginning: Bool { epoch == 0 && sequence == 0 && self != .oldestKept }

    /// Not a position but a request: resume with everything the room keeps, and report no gap.
    /// What a client with no position asks for to get a room's recent mail as it joins.
    ///
    /// Its epoch is 0, which no mailroom or relay draws, so it is never taken for a real position;
    /// its string reads back as itself. (Epoch 0 with a room's stream and room, at sequence 0, is
    /// that room's beginning while a relay shares the type's positions: see ``Resumption/start``.)
    ///
    /// ```swift
    /// let joined = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: .oldestKept)
    /// ```
    public static let oldestKept = MailPosition(epoch: 0, stream: 0, room: 0, sequence: 0)

    /// The longest string a position has: 16 + 1 + 8 + 1 + 8 + 1 + 20 characters.
    public static let maximumLength = 55

    /// Reads a position from its string, or says why it is not one.
    ///
    /// The form is `EPOCH-STREAM-ROOM-SEQUENCE`: 16, 8 and 8 lowercase hexadecimal digits, then a
    /// decimal number from 0 to `UInt64.max` with no sign or leading zero. Nothing longer than
    /// ``maximumLength`` is read at all. The three-part form of AsyncMail 0.x (`EPOCH-STREAM-SEQUENCE`,
    /// when history was kept per type) is refused as malformed: its sequence counts another room's mail.
    ///
    /// - Throws: a ``PositionError`` with code ``PositionError/Code/malformed``, whose `reason` says
    ///   which part is wrong. The error is untyped, as ``Mailroom``'s resuming `subscribe` calls'
    ///   are (the Coming Back article says why): catch it with `catch let error as PositionError`.
    ///
    /// ```swift
    /// let position = try MailPosition(parsing: text)  // text from a client: untrusted
    /// ```
    public init(parsing text: some StringProtocol) throws {
        self = try Self.read(text)
    }

    /// The reading behind ``init(parsing:)``: typed inside, so that each refusal is written
    /// `throw .malformed(…)`; untyped only where it leaves the library.
    private static func read(_ text: some StringProtocol) throws(PositionError) -> MailPosition {
        let utf8 = Array(text.utf8.prefix(Self.maximumLength + 1))
        guard utf8.count <= Self.maximumLength else { throw .malformed("longer than \(Self.maximumLength) bytes") }
        let parts = utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 4 else { throw .malformed("not four parts separated by '-'") }
        guard parts[0].count == 16, let epoch = Self.hex(parts[0]) else {
            throw .malformed("the epoch is not 16 lowercase hexadecimal digits")
        }
        guard parts[1].count == 8, let stream = Self.hex(parts[1]) else {
            throw .malformed("the stream is not 8 lowercase hexadecimal digits")
        }
        guard parts[2].count == 8, let room = Self.hex(parts[2]) else {
            throw .malformed("the room is not 8 lowercase hexadecimal digits")
        }
        guard let sequence = Self.decimal(parts[3]) else {
            throw .malformed("the sequence is not a number from 0 to \(UInt64.max) without leading zeros")
        }
        return MailPosition(epoch: epoch, stream: UInt32(stream), room: UInt32(room), sequence: sequence)
    }

    @available(
        *,
        unavailable,
        message: "a position from outside is untrusted: use try MailPosition(parsing:), which says why it is refused"
    )
    public init?(_ description: String) {
        fatalError("unavailable")
    }

    /// The position as a string a client can keep and hand back.
    public var description: String {
        Self.paddedHex(epoch, digits: 16) + "-" + Self.paddedHex(UInt64(stream), digits: 8) + "-"
            + Self.paddedHex(UInt64(room), digits: 8) + "-" + String(sequence)
    }

    public static func < (lhs: MailPosition, rhs: MailPosition) -> Bool {
        (lhs.epoch, lhs.stream, lhs.room, lhs.sequence) < (rhs.epoch, rhs.stream, rhs.room, rhs.sequence)
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
        guard let first = bytes.first, (1...20).contains(bytes.count), first != UInt8(ascii: "0") || bytes.count == 1
        else { return nil }
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
