import Foundation
@_spi(AsyncMailRelay) import RelayWire
import Testing

/// The relay's JSON encoder against Foundation's `JSONEncoder`, the reference for what every
/// relay reads: the same JSON for every shape it writes itself, and the shapes it cannot write
/// as it goes handed to `JSONEncoder` whole.
@Suite("MailEncoder, against JSONEncoder")
struct MailEncoderTests {
    @Test("every shape it writes itself is JSONEncoder's JSON, and decodes back to the value")
    func writesWhatJSONEncoderWrites() throws {
        let encoder = MailEncoder()
        try expectSame(Everything(), encoder)
        try expectSame(Everything(choice: .three(inner: Inner(a: -1, b: [], c: 0.5))), encoder)
        try expectSame(Subclass(), encoder)
        try expectSame("top/level \"text\"", encoder)
        try expectSame(42, encoder)
        try expectSame([1.5, 2, -0.0], encoder)
        try expectSame(Int?.none, encoder)
        try expectSame(Data([1, 2, 3]), encoder)
        try expectSame([URL(string: "a/b?c=d")!], encoder)
        try expectSame([Decimal(string: "-0.000125")!], encoder)
        try expectSame(Wrapped(value: Float16(1.5)), encoder)
        try expectSame(Encoded(value: [Int128.min, 0]), encoder)
        try expectSame(Encoded(value: [UInt128.max]), encoder)
        try expectSame(Wrapped(value: EmptyObject()), encoder)
        try expectSame(Wrapped(value: [String: Int]()), encoder)
        // Every byte below 0x80, and scalars of every UTF-8 length.
        let text = String(String.UnicodeScalarView((0..<0x80).compactMap(Unicode.Scalar.init))) + "é€😀"
        try expectSame(Wrapped(value: text), encoder)
        #expect(encoder.fallbacks == 0, "every shape above is written by the sink")
    }

    @Test("random values of every JSON shape, nested: the same JSON as JSONEncoder's, written by the sink")
    func randomValues() throws {
        var generator = SplitMix(state: 57)
        let encoder = MailEncoder()
        for _ in 0..<500 {
            try expectSame(AnyJSON.random(depth: 4, using: &generator), encoder)
        }
        #expect(encoder.fallbacks == 0)
    }

    @Test("what it cannot write as it goes, JSONEncoder writes, or throws as it always did")
    func handsOverWhatItCannotWrite() throws {
        let encoder = MailEncoder()
        // A key twice: JSONEncoder keeps the last value.
        #expect(try Data(encoder.encode(KeyTwice())) == JSONEncoder().encode(KeyTwice()))
        #expect(encoder.fallbacks == 1)
        try expectSame(UsesSuperEncoder(), encoder)
        #expect(encoder.fallbacks == 2)
        try expectSame(BackToADoneContainer(), encoder)
        #expect(encoder.fallbacks == 3)
        try expectSame(Wrapped(value: EncodesNothing()), encoder)
        #expect(encoder.fallbacks == 4)
        let large = Dictionary(uniqueKeysWithValues: (0..<100).map { ("key\($0)", $0) })
        try expectSame(large, encoder)
        #expect(encoder.fallbacks == 5)
        try expectSame(Nested(depth: 505), encoder)  // JSONEncoder's limit is 512
        #expect(encoder.fallbacks == 6)

        // The errors are JSONEncoder's own, and the bytes are as they were.
        var bytes = Array("[".utf8)
        #expect(throws: EncodingError.self) { try encoder.append(Wrapped(value: Double.nan), to: &bytes) }
        #expect(throws: EncodingError.self) { try encoder.append(EncodesNothing(), to: &bytes) }
        #expect(throws: Refused.self) { try encoder.append(Wrapped(value: Throws()), to: &bytes) }
        #expect(bytes == Array("[".utf8))

        // The sink starts each value afresh after handing one over.
        try encoder.append(Wrapped(value: "after"), to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"[{"value":"after"}"#)
        #expect(encoder.fallbacks == 9)
    }

    @Test("coding paths are JSONEncoder's, for a value that reads them")
    func codingPaths() throws {
        let encoder = MailEncoder()
        let value = Wrapped(value: [PathReporter(), PathReporter()])
        try expectSame(value, encoder)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(encoder.encode(value))) as? [String: [String]]
        )
        #expect(json["value"] == ["value/Index 0", "value/Index 1"])
        #expect(encoder.fallbacks == 0)
    }

    /// Checks that `encoder` writes what `JSONEncoder` writes for `value`, up to the order of an
    /// object's keys, and that it decodes back to `value`.
    private func expectSame<T: Codable & Equatable>(
        _ value: T,
        _ encoder: MailEncoder,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reference = try JSONEncoder().encode(value)
        var bytes = Array("prefix".utf8)
        try encoder.append(value, to: &bytes)
        #expect(bytes.prefix(6).elementsEqual("prefix".utf8), sourceLocation: sourceLocation)
        let written = Data(bytes.dropFirst(6))
        #expect(
            try parsed(written) == parsed(reference),
            "\(String(decoding: written, as: UTF8.self)) against \(String(decoding: reference, as: UTF8.self))",
            sourceLocation: sourceLocation
        )
        #expect(try JSONDecoder().decode(T.self, from: written) == value, sourceLocation: sourceLocation)
    }

    private func expectSame<T: Encodable>(
        _ value: T,
        _ encoder: MailEncoder,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let written = Data(try encoder.encode(value))
        let reference = try JSONEncoder().encode(value)
        #expect(try parsed(written) == parsed(reference), sourceLocation: sourceLocation)
    }

    private func parsed(_ data: Data) throws -> NSObject {
        try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as! NSObject
    }
}

private struct Inner: Codable, Equatable {
    var a: Int
    var b: [String?]
    var c: Double
}

private enum Choice: Codable, Equatable {
    case one
    case two(Int, name: String)
    case three(inner: Inner)
}

private struct Everything: Codable, Equatable {
    var text = "he said \"hi\" / \\ \n\t\u{01}\u{1F} é 😀 \u{7F}"
    var int8: Int8 = -8
    var uint64 = UInt64.max
    var int64 = Int64.min
    var float: Float = 0.1
    var whole = 1.0
    var small = 1e-7
    var large = 1e300
    var flag = true
    var absent: Int? = nil
    var present: String? = "x"
    var data = Data([0, 1, 2, 250])
    var date = Date(timeIntervalSinceReferenceDate: 12345.678)
    var url = URL(string: "https://example.com/a?b=c#d")!
    var decimal = Decimal(string: "-12.3400")!
    var byText = ["k": 1, "/": 2]
    var byNumber = [3: "x", 1: "y"]
    var byUUID = [UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!: 1]
    var nested = [[1, 2], []]
    var choice = Choice.two(3, name: "n")
    var bare = Choice.one
    var set: Set<Int> = [1]
}

private class Base: Codable, Equatable {
    var base = 1
    init() {}
    static func == (lhs: Base, rhs: Base) -> Bool { lhs.base == rhs.base }
}

/// Encodes into its superclass's container, through the same encoder.
private final class Subclass: Base {
    var sub = "s"
    private enum Keys: CodingKey { case sub }

    override init() { super.init() }

    required init(from decoder: any Decoder) throws {
        sub = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .sub)
        try super.init(from: decoder)
    }

    override func encode(to encoder: any Encoder) throws {
        try super.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(sub, forKey: .sub)
    }
}

private struct Wrapped<Value: Codable & Equatable>: Codable, Equatable {
    let value: Value
}

/// For values `JSONDecoder` may not read back.
private struct Encoded<Value: Encodable>: Encodable {
    let value: Value
}

private struct EmptyObject: Codable, Equatable {}

private struct KeyTwice: Encodable {
    private enum Keys: CodingKey { case x }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .x)
        try container.encode(2, forKey: .x)
    }
}

private struct UsesSuperEncoder: Encodable {
    private enum Keys: CodingKey { case x }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .x)
        try Base().encode(to: container.superEncoder())
    }
}

/// Writes into a nested container after its parent moved on to another key.
private struct BackToADoneContainer: Encodable {
    private enum Keys: CodingKey { case a, b, c }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
        try container.encode(1, forKey: .b)
        try nested.encode(2, forKey: .c)
    }
}

/// Arrays in arrays, `depth` deep.
private struct Nested: Encodable {
    let depth: Int

    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        if depth > 1 { try container.encode(Nested(depth: depth - 1)) }
    }
}

private struct EncodesNothing: Codable, Equatable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
}

private struct Refused: Error {}

private struct Throws: Codable, Equatable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws { throw Refused() }
}

/// Encodes its coding path, as a value that reads it would see it.
private struct PathReporter: Codable, Equatable {
    init() {}
    init(from decoder: any Decoder) throws { _ = try decoder.singleValueContainer().decode(String.self) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(encoder.codingPath.map(\.stringValue).joined(separator: "/"))
    }
}

/// Any JSON value, encoded through every kind of container.
private indirect enum AnyJSON: Encodable {
    case text(String)
    case integer(Int)
    case number(Double)
    case flag(Bool)
    case null
    case array([AnyJSON])
    case object([String: AnyJSON])

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let values):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in values { try container.encode(value, forKey: Key(stringValue: key)) }
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .text(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .integer(let integer):
            var container = encoder.singleValueContainer()
            try container.encode(integer)
        case .number(let number):
            var container = encoder.singleValueContainer()
            try container.encode(number)
        case .flag(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }

    static func random(depth: Int, using generator: inout SplitMix) -> AnyJSON {
        switch Int.random(in: 0..<(depth > 0 ? 7 : 5), using: &generator) {
        case 0: .text(generator.text())
        case 1:
            .integer(Int.random(in: Int.min...Int.max, using: &generator) >> Int.random(in: 0..<64, using: &generator))
        case 2:
            .number(
                Double(
                    sign: .plus,
                    exponentBitPattern: UInt.random(in: 900...1100, using: &generator),
                    significandBitPattern: generator.next() >> 12
                )
            )
        case 3: .flag(Bool.random(using: &generator))
        case 4: .null
        case 5:
            .array(
                (0..<Int.random(in: 0..<5, using: &generator)).map { _ in random(depth: depth - 1, using: &generator) }
            )
        default:
            .object(
                Dictionary(
                    (0..<Int.random(in: 0..<5, using: &generator)).map { _ in
                        (generator.text(), random(depth: depth - 1, using: &generator))
                    },
                    uniquingKeysWith: { first, _ in first }
                )
            )
        }
    }
}

extension SplitMix {
    /// Fewer than `limit` scalars of every UTF-8 length, control characters included: what the
    /// relays' JSON coders escape and unescape.
    mutating func text(below limit: Int = 12) -> String {
        let scalars = (0..<Int.random(in: 0..<limit, using: &self)).compactMap { _ in
            switch Int.random(in: 0..<4, using: &self) {
            case 0: Unicode.Scalar(UInt8.random(in: 0..<0x20, using: &self))
            case 1: Unicode.Scalar(UInt8.random(in: 0x20..<0x80, using: &self))
            case 2: Unicode.Scalar(UInt32.random(in: 0x80..<0xD800, using: &self))
            default: Unicode.Scalar(UInt32.random(in: 0xE000..<0x11_0000, using: &self))
            }
        }
        return String(String.UnicodeScalarView(scalars))
    }
}
