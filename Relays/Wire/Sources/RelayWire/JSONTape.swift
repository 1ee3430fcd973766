/// The reading half of ``MailDecoder``: a JSON text parsed once into a flat list of its values
/// (the tape), which the `Decoder` below reads in place, without a dictionary per object.
///
/// The parser accepts strict JSON (RFC 8259) only, and less of it than `JSONDecoder` does: no
/// byte-order mark, no lone surrogate escapes, nesting to 500 levels. The decoder answers only
/// what it can answer exactly as `JSONDecoder` would, and throws otherwise (an object with a key
/// twice, a number that is not a plain integer read as an integer, a `Float`, a `Decimal`, a
/// `superDecoder`). Any throw at all, even one the value's `init(from:)` catches, sets
/// ``failed``, and ``MailDecoder`` decodes the text again with `JSONDecoder`, whose value or
/// error is then the answer. So the tape never decides anything `JSONDecoder` would decide
/// otherwise; it only decides faster.
final class JSONTape {
    /// One JSON value: a container is followed by its elements (an object's as key, value, key,
    /// value…), each with its own elements after it.
    struct Node {
        enum Kind: UInt8 {
            case object, array, string, number, `true`, `false`, null
        }

        var kind: Kind
        /// For a string: its text has no escape and no byte past ASCII, so its bytes are its
        /// characters. For a number: it is a plain integer, with no fraction and no exponent.
        var isPlain = true
        /// Where its text starts and ends in the bytes: within the quotes, for a string.
        var start: Int32
        var end: Int32
        /// A container's element count (an object's keys).
        var count: Int32 = 0
        /// The index of the node after this value and everything in it.
        var next: Int32 = 0
    }

    /// Thrown, and set in ``failed``, wherever the decoder leaves the text to `JSONDecoder`.
    struct Unsupported: Error {}

    let bytes: [UInt8]
    let nodes: [Node]
    /// Set by any throw: ``MailDecoder`` then asks `JSONDecoder`.
    var failed = false
    let userInfo: [CodingUserInfoKey: Any]

    /// Parses `text`; nil when it is not JSON this parser takes.
    init?(_ text: Substring, userInfo: [CodingUserInfoKey: Any]) {
        var text = text
        bytes = text.withUTF8 { Array($0) }  // one copy; `Array(text.utf8)` goes byte by byte
        self.userInfo = userInfo
        guard bytes.count < Int32.max else { return nil }
        var parser = Parser(bytes: bytes)
        var position = 0
        guard parser.parseValue(at: &position, depth: 0) else { return nil }
        parser.skipWhitespace(&position)
        guard position == bytes.count else { return nil }
        nodes = parser.nodes
    }

    /// The node of the key after the key at `key`, in an object: past the key's value.
    func nextKey(after key: Int) -> Int { Int(nodes[key + 1].next) }

    func unsupported() -> Unsupported {
        failed = true
        return Unsupported()
    }

    // MARK: Reading values

    /// The string at `node`, unescaped.
    func string(at node: Int) throws -> String {
        let value = nodes[node]
        guard value.kind == .string else { throw unsupported() }
        if value.isPlain {
            // Through a buffer pointer: a slice of `bytes` would retain and release its storage.
            return bytes.withUnsafeBufferPointer { buffer in
                String(
                    decoding: UnsafeBufferPointer(rebasing: buffer[Int(value.start)..<Int(value.end)]),
                    as: UTF8.self
                )
            }
        }
        return unescaped(bytes[Int(value.start)..<Int(value.end)])
    }

    /// Whether the key at `node` is `key`, as `String` compares them (canonical equivalence).
    func key(at node: Int, is key: String) -> Bool {
        let value = nodes[node]
        if value.isPlain, key.utf8.allSatisfy({ $0 < 0x80 }) {
            return bytes.withUnsafeBufferPointer { buffer in
                key.utf8.elementsEqual(buffer[Int(value.start)..<Int(value.end)])
            }
        }
        return (try? string(at: node)) == key
    }

    /// A text whose escapes were checked by the parser.
    private func unescaped(_ text: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                index += 1
                continue
            }
            let escape = text[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(Self.hexUnit(in: bytes, at: index)!)
                index += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    let low = UInt32(Self.hexUnit(in: bytes, at: index + 2)!)
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                UTF8.encode(Unicode.Scalar(scalar)!) { output.append($0) }  // the parser checked the pairs
            default: output.append(escape)  // a quote, a backslash or a slash
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The four hex digits at `position`, if there are four.
    static func hexUnit(in bytes: [UInt8], at position: Int) -> UInt16? {
        guard position + 4 <= bytes.count else { return nil }
        var unit: UInt16 = 0
        for byte in bytes[position..<(position + 4)] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// The integer at `node`, when its text is a plain integer that fits `T`.
    func integer<T: FixedWidthInteger>(at node: Int, as type: T.Type) throws -> T {
        let value = nodes[node]
        guard value.kind == .number, value.isPlain else { throw unsupported() }
        var index = Int(value.start)
        let negative = bytes[index] == UInt8(ascii: "-")
        guard !negative || T.isSigned else { throw unsupported() }  // "-0" as unsigned: JSONDecoder decides
        if negative { index += 1 }
        var result: T = 0
        while index < Int(value.end) {
            let digit = T(bytes[index] - UInt8(ascii: "0"))
            let (shifted, overflowed) = result.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowed, !overflowedAgain else { throw unsupported() }
            result = next
            index += 1
        }
        return result
    }

    /// The `Double` at `node`, when it is finite, and zero only if its text is (`JSONDecoder`
    /// refuses a number too small to be anything but zero).
    func double(at node: Int) throws -> Double {
        let value = nodes[node]
        guard value.kind == .number else { throw unsupported() }
        let text = bytes[Int(value.start)..<Int(value.end)]
        let significand = text.prefix(while: { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") })
        guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite,
            number != 0 || significand.allSatisfy({ !(UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0) })
        else { throw unsupported() }
        return number
    }

    func bool(at node: Int) throws -> Bool {
        switch nodes[node].kind {
        case .true: return true
        case .false: return false
        default: throw unsupported()
        }
    }
}

/// Parses a text into ``JSONTape``'s nodes.
private struct Parser {
    /// `JSONDecoder`'s limit on nesting, less a margin: deeper texts go to `JSONDecoder`.
    static let maximumDepth = 500

    typealias Node = JSONTape.Node

    let bytes: [UInt8]
    var nodes: [Node] = []

    init(bytes: [UInt8]) {
        self.bytes = bytes
        nodes.reserveCapacity(bytes.count / 8)
    }

    func skipWhitespace(_ position: inout Int) {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func parseValue(at position: inout Int, depth: Int) -> Bool {
        skipWhitespace(&position)
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "{"): return parseContainer(at: &position, depth: depth, isObject: true)
        case UInt8(ascii: "["): return parseContainer(at: &position, depth: depth, isObject: false)
        case UInt8(ascii: "\""): return parseString(at: &position)
        case UInt8(ascii: "t"): return parseLiteral("true", .true, at: &position)
        case UInt8(ascii: "f"): return parseLiteral("false", .false, at: &position)
        case UInt8(ascii: "n"): return parseLiteral("null", .null, at: &position)
        default: return parseNumber(at: &position)
        }
    }

    private mutating func parseContainer(at position: inout Int, depth: Int, isObject: Bool) -> Bool {
        guard depth < Self.maximumDepth else { return false }
        let index = nodes.count
        nodes.append(Node(kind: isObject ? .object : .array, start: Int32(position), end: 0))
        position += 1
        var count: Int32 = 0
        skipWhitespace(&position)
        let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        if position < bytes.count, bytes[position] == closing {
            position += 1
        } else {
            while true {
                if isObject {
                    skipWhitespace(&position)
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), parseString(at: &position)
                    else { return false }
                    skipWhitespace(&position)
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return false }
                    position += 1
                }
                guard parseValue(at: &position, depth: depth + 1) else { return false }
                count += 1
                skipWhitespace(&position)
                guard position < bytes.count else { return false }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                } else if bytes[position] == closing {
                    position += 1
                    break
                } else {
                    return false
                }
            }
        }
        nodes[index].end = Int32(position)
        nodes[index].count = count
        nodes[index].next = Int32(nodes.count)
        return true
    }

    /// A string, its escapes checked: `\u` needs four hex digits, and a surrogate its pair.
    private mutating func parseString(at position: inout Int) -> Bool {
        position += 1  // the quote
        let start = position
        var isPlain = true
        while position < bytes.count {
            // Plain ASCII, the bulk of a mail's text, skipped in a tight loop.
            position = bytes.withUnsafeBufferPointer { buffer in
                var index = position
                while index < buffer.count {
                    let byte = buffer[index]
                    guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else {
                        break
                    }
                    index += 1
                }
                return index
            }
            guard position < bytes.count else { return false }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                nodes.append(
                    Node(
                        kind: .string,
                        isPlain: isPlain,
                        start: Int32(start),
                        end: Int32(position),
                        next: Int32(nodes.count + 1)
                    )
                )
                position += 1
                return true
            }
            if byte < 0x20 { return false }
            if byte >= 0x80 { isPlain = false }
            if byte == UInt8(ascii: "\\") {
                isPlain = false
                position += 1
                guard position < bytes.count else { return false }
                switch bytes[position] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    guard let unit = JSONTape.hexUnit(in: bytes, at: position + 1) else { return false }
                    position += 4
                    if (0xD800..<0xDC00).contains(unit) {
                        guard position + 2 < bytes.count, bytes[position + 1] == UInt8(ascii: "\\"),
                            bytes[position + 2] == UInt8(ascii: "u"),
                            let low = JSONTape.hexUnit(in: bytes, at: position + 3),
                            (0xDC00..<0xE000).contains(low)
                        else { return false }
                        position += 6
                    } else if (0xDC00..<0xE000).contains(unit) {
                        return false
                    }
                default:
                    return false
                }
            }
            position += 1
        }
        return false
    }

    private mutating func parseLiteral(_ literal: StaticString, _ kind: Node.Kind, at position: inout Int) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        let matches = literal.withUTF8Buffer { bytes[position..<(position + count)].elementsEqual($0) }
        guard matches else { return false }
        nodes.append(
            Node(kind: kind, start: Int32(position), end: Int32(position + count), next: Int32(nodes.count + 1))
        )
        position += count
        return true
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; its node is plain when it is an integer.
    private mutating func parseNumber(at position: inout Int) -> Bool {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - first
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return false }
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard digits() > 0 else { return false }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { return false }
        }
        nodes.append(
            Node(
                kind: .number,
                isPlain: isInteger,
                start: Int32(start),
                end: Int32(position),
                next: Int32(nodes.count + 1)
            )
        )
        return true
    }
}
