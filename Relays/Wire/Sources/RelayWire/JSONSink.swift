import Foundation

/// The writing half of ``MailEncoder``: an `Encoder` whose containers write JSON text into
/// `bytes` as values are encoded, instead of building a tree to write afterwards.
///
/// Text is written in the order values arrive, so the sink keeps the containers still open, each
/// with the value slot it fills. A container is done once its parent takes its next element;
/// going back to a container that is done, or anything else that order cannot express, makes
/// ``write(_:)`` return false, and ``MailEncoder`` asks `JSONEncoder` instead.
///
/// Its stored properties opt out of Swift's run-time exclusivity checks: with them, the checks
/// took a third of the time to encode a mail. That is safe because every access is over before
/// any other begins. No method holds an access while it calls code that could reach the sink
/// again (a value's `encode(to:)`, a key's `stringValue`): those calls take their arguments
/// first and store their results after, and the closure in ``writeString(_:)`` touches only
/// `bytes`. The sink is used by one thread at a time: ``MailEncoder`` is not `Sendable`.
/// `MailEncoderTests` encodes every shape the sink writes, and those it hands over, against
/// `JSONEncoder`; the relay suites run it under ThreadSanitizer.
final class JSONSink {
    @exclusivity(unchecked) var bytes: [UInt8] = []

    /// An object or array whose closing bracket is not written yet.
    private struct Open {
        let id: Int
        /// The value slot it fills: which encoder asked for it.
        let slot: Int
        let isObject: Bool
        var hasElements = false
    }

    /// Thrown, and set in ``failed``, where the value must go to `JSONEncoder` instead.
    private struct Unsupported: Error {}

    /// Foundation refuses values nested 512 deep; deeper than this, ``MailEncoder`` leaves the
    /// value to it, which writes it or throws its own error.
    private static let maximumDepth = 500

    /// The digits of a `\u00XX` escape, lower case as `JSONEncoder` writes them.
    private static let hexDigits = Array("0123456789abcdef".utf8)

    @exclusivity(unchecked) private var open: [Open] = []
    /// The keys written so far in each open object, by depth: a key encoded twice is left to
    /// `JSONEncoder`, where the last value wins. Kept between values for their capacity.
    @exclusivity(unchecked) private var keys: [[String]] = []
    /// The value slot waiting for its value, if any: a value is encoded into a slot, and fills it
    /// with a primitive or with a container.
    @exclusivity(unchecked) private var pendingSlot: Int?
    @exclusivity(unchecked) private var lastID = 0
    /// Set where a call that cannot throw met what the sink does not write.
    @exclusivity(unchecked) private var failed = false

    /// Writes `value` after `bytes`; false when it must be encoded by `JSONEncoder` instead, with
    /// part of its text in `bytes`.
    func write<T: Encodable>(_ value: T) -> Bool {
        open.removeAll(keepingCapacity: true)
        pendingSlot = nil
        failed = false
        do {
            try writeValue(value, codingPath: [])
        } catch {
            return false
        }
        return !failed
    }

    /// Writes `value` into a new slot at the current position; closes whatever it opened.
    func writeValue<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        let depth = open.count
        let slot = nextID()
        pendingSlot = slot
        try fill(slot, with: value, codingPath: codingPath)
        guard !failed, pendingSlot == nil else { throw unsupported() }  // it encoded nothing
        close(downTo: depth)
    }

    /// Writes `value` into `slot`: the types `JSONEncoder` writes its own way, or what the value's
    /// `encode(to:)` writes.
    func fill<T: Encodable>(_ slot: Int, with value: T, codingPath: [any CodingKey]) throws {
        if T.self == String.self {
            try take(slot)
            writeString(value as! String)
        } else if T.self == Int.self {
            try take(slot)
            writeInteger(value as! Int)
        } else if T.self == Bool.self {
            try take(slot)
            writeBool(value as! Bool)
        } else if T.self == Double.self {
            try take(slot)
            try writeFloat(value as! Double)
        } else if T.self == Data.self {
            try take(slot)
            writeString((value as! Data).base64EncodedString())
        } else if T.self == URL.self {
            try take(slot)
            writeString((value as! URL).absoluteString)
        } else if T.self == Decimal.self {
            try take(slot)
            bytes.append(contentsOf: (value as! Decimal).description.utf8)
        } else {
            try value.encode(to: SinkEncoder(sink: self, slot: slot, codingPath: codingPath))
        }
    }

    /// Fills `slot` with a primitive about to be written.
    func take(_ slot: Int) throws {
        guard !failed, pendingSlot == slot else { throw unsupported() }
        pendingSlot = nil
    }

    /// The container `slot`'s encoder asks for: a new one if the slot is empty, or the one it
    /// already made if that is still open, as when a subclass encodes after its superclass.
    func container(for slot: Int, isObject: Bool) -> (id: Int, depth: Int) {
        if !failed, pendingSlot == slot {
            guard open.count < Self.maximumDepth else {
                failed = true
                return (-1, 0)
            }
            pendingSlot = nil
            bytes.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
            let depth = open.count
            open.append(Open(id: nextID(), slot: slot, isObject: isObject))
            if isObject {
                while keys.count <= depth { keys.append([]) }
                keys[depth].removeAll(keepingCapacity: true)
            }
            return (open[depth].id, depth)
        }
        if !failed, let depth = open.lastIndex(where: { $0.slot == slot }), open[depth].isObject == isObject {
            return (open[depth].id, depth)
        }
        failed = true
        return (-1, 0)
    }

    /// A container for the element `key` (nil in an array) of container `id` at `depth`.
    func nestedContainer(in id: Int, depth: Int, key: String?, isObject: Bool) -> (id: Int, depth: Int) {
        do {
            try beginElement(in: id, depth: depth, key: key)
        } catch {
            return (-1, 0)
        }
        let slot = nextID()
        pendingSlot = slot
        return container(for: slot, isObject: isObject)
    }

    /// An encoder that writes nothing: `superEncoder()`, which this sink leaves to `JSONEncoder`.
    func unsupportedEncoder(codingPath: [any CodingKey]) -> any Encoder {
        failed = true
        return SinkEncoder(sink: self, slot: -1, codingPath: codingPath)
    }

    /// Starts the next element of container `id` at `depth`: closes the containers inside it (their
    /// values are done), then writes the separator and the key.
    func beginElement(in id: Int, depth: Int, key: String?) throws {
        guard !failed, pendingSlot == nil, depth < open.count, open[depth].id == id else { throw unsupported() }
        close(downTo: depth + 1)
        if let key {
            // Objects are small, and comparing short keys is cheaper than hashing them; a
            // dictionary's thousands of keys would make this quadratic, so past 32 keys the
            // object is left to `JSONEncoder`.
            guard keys[depth].count < 32, !keys[depth].contains(key) else { throw unsupported() }
            keys[depth].append(key)
        }
        if open[depth].hasElements {
            bytes.append(UInt8(ascii: ","))
        } else {
            open[depth].hasElements = true
        }
        if let key {
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
        }
    }

    func writeNull() {
        bytes.append(contentsOf: "null".utf8)
    }

    func writeBool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    func writeInteger<I: FixedWidthInteger>(_ value: I) {
        bytes.append(contentsOf: value.description.utf8)
    }

    /// As `JSONEncoder` writes it: the shortest text that reads back the same, without a trailing
    /// `.0`; a NaN or an infinity is left to `JSONEncoder`, which throws.
    func writeFloat<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) throws {
        guard value.isFinite else { throw unsupported() }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// `string` quoted, escaped as `JSONEncoder` escapes it: `"`, `\`, `/` and control characters.
    func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var mark = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard
                    byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/")
                else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<index]))
                mark = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x00..<0x20:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0x0F)])
                default: bytes.append(byte)  // a quote, a backslash or a slash
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private func close(downTo depth: Int) {
        while open.count > depth {
            bytes.append(open.removeLast().isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    private func nextID() -> Int {
        lastID &+= 1
        return lastID
    }

    private func unsupported() -> Unsupported {
        failed = true
        return Unsupported()
    }
}

/// The encoder a value's `encode(to:)` is given: it fills one slot.
private struct SinkEncoder: Encoder {
    let sink: JSONSink
    let slot: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }  // JSONEncoder's default

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let (id, depth) = sink.container(for: slot, isObject: true)
        return KeyedEncodingContainer(SinkKeyed<Key>(sink: sink, id: id, depth: depth, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let (id, depth) = sink.container(for: slot, isObject: false)
        return SinkUnkeyed(sink: sink, id: id, depth: depth, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SinkSingleValue(sink: sink, slot: slot, codingPath: codingPath)
    }
}

private struct SinkKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: JSONSink
    let id: Int
    let depth: Int
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) throws {
        try sink.beginElement(in: id, depth: depth, key: key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws {
        try begin(key)
        sink.writeNull()
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try begin(key)
        sink.writeBool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try begin(key)
        sink.writeString(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try begin(key)
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key)
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try integer(value, key) }

    private func integer<I: FixedWidthInteger>(_ value: I, _ key: Key) throws {
        try begin(key)
        sink.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try begin(key)
        try sink.writeValue(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let (id, depth) = sink.nestedContainer(in: id, depth: depth, key: key.stringValue, isObject: true)
        return KeyedEncodingContainer(
            SinkKeyed<NestedKey>(sink: sink, id: id, depth: depth, codingPath: codingPath + [key])
        )
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let (id, depth) = sink.nestedContainer(in: id, depth: depth, key: key.stringValue, isObject: false)
        return SinkUnkeyed(sink: sink, id: id, depth: depth, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { sink.unsupportedEncoder(codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { sink.unsupportedEncoder(codingPath: codingPath) }
}

private struct SinkUnkeyed: UnkeyedEncodingContainer {
    let sink: JSONSink
    let id: Int
    let depth: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(sink: JSONSink, id: Int, depth: Int, codingPath: [any CodingKey]) {
        self.sink = sink
        self.id = id
        self.depth = depth
        self.codingPath = codingPath
    }

    private mutating func begin() throws {
        try sink.beginElement(in: id, depth: depth, key: nil)
        count += 1
    }

    mutating func encodeNil() throws {
        try begin()
        sink.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        try begin()
        sink.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try begin()
        sink.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try begin()
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Float) throws {
        try begin()
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: Int128) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }
    mutating func encode(_ value: UInt128) throws { try integer(value) }

    private mutating func integer<I: FixedWidthInteger>(_ value: I) throws {
        try begin()
        sink.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = IndexKey(count)
        try begin()
        try sink.writeValue(value, codingPath: codingPath + [index])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let index = IndexKey(count)
        count += 1
        let (id, depth) = sink.nestedContainer(in: id, depth: depth, key: nil, isObject: true)
        return KeyedEncodingContainer(
            SinkKeyed<NestedKey>(sink: sink, id: id, depth: depth, codingPath: codingPath + [index])
        )
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let index = IndexKey(count)
        count += 1
        let (id, depth) = sink.nestedContainer(in: id, depth: depth, key: nil, isObject: false)
        return SinkUnkeyed(sink: sink, id: id, depth: depth, codingPath: codingPath + [index])
    }

    mutating func superEncoder() -> any Encoder { sink.unsupportedEncoder(codingPath: codingPath) }
}

private struct SinkSingleValue: SingleValueEncodingContainer {
    let sink: JSONSink
    let slot: Int
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws {
        try sink.take(slot)
        sink.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        try sink.take(slot)
        sink.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try sink.take(slot)
        sink.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try sink.take(slot)
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Float) throws {
        try sink.take(slot)
        try sink.writeFloat(value)
    }
    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: Int128) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }
    mutating func encode(_ value: UInt128) throws { try integer(value) }

    private func integer<I: FixedWidthInteger>(_ value: I) throws {
        try sink.take(slot)
        sink.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try sink.fill(slot, with: value, codingPath: codingPath)
    }
}

/// An array element's place in a coding path, named as `JSONEncoder` and `JSONDecoder` name it.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }

    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}
