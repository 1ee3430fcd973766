import Foundation
@_spi(AsyncMailRelay) import RelayWire
import Testing

/// The relay's JSON decoder against Foundation's `JSONDecoder`: for any text, valid or not, the
/// same value, or a `JSONDecoder` error where `JSONDecoder` throws; and the shapes the relay
/// carries read without `JSONDecoder`.
@Suite("MailDecoder, against JSONDecoder")
struct MailDecoderTests {
    @Test("values of every shape JSONEncoder writes decode as JSONDecoder decodes them, without it")
    func decodesWhatJSONDecoderDecodes() throws {
        let decoder = MailDecoder()
        var generator = SplitMix(state: 57)
        for _ in 0..<300 {
            let value = Shapes.random(depth: 3, using: &generator)
            let text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
            #expect(try decoder.decode(Shapes.self, from: Substring(text)) == value, "\(text)")
        }
        let escaped = #"{"text":"\"\\\/\b\f\n\r\t\u0000\u001f\u00e9\u20ac\ud83d\ude00 é","number":-0,"flag":false}"#
        try expectSame(Plain.self, escaped, decoder)
        #expect(decoder.fallbacks == 0, "every text above is read from the tape")
    }

    @Test("Float, Decimal, a key twice, a number read as an integer that is not one: JSONDecoder's answer")
    func leavesTheRestToJSONDecoder() throws {
        let decoder = MailDecoder()
        try expectSame(Wrapped<Float>.self, #"{"value":0.1}"#, decoder)
        try expectSame(Wrapped<Decimal>.self, #"{"value":-1.25e-3}"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"value":1,"value":2}"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"value":1.0}"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"value":1e2}"#, decoder)
        try expectSame(Wrapped<UInt8>.self, #"{"value":256}"#, decoder)
        try expectSame(Wrapped<UInt8>.self, #"{"value":-0}"#, decoder)
        try expectSame(Wrapped<Double>.self, #"{"value":1e400}"#, decoder)
        try expectSame(Wrapped<String>.self, #"{"value":"\ud800"}"#, decoder)
        try expectSame(Wrapped<String>.self, "\u{FEFF}{\"value\":\"x\"}", decoder)
        try expectSame(Wrapped<String>.self, #"{"value":"x",}"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"value":01}"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"value":1} x"#, decoder)
        try expectSame(Wrapped<Int>.self, #"{"other":1}"#, decoder)
        try expectSame(Wrapped<Int?>.self, #"{"value":null}"#, decoder)
        try expectSame(Wrapped<Int?>.self, #"{}"#, decoder)
        try expectSame(Wrapped<Data>.self, #"{"value":"not base64"}"#, decoder)
        try expectSame(Wrapped<URL>.self, #"{"value":""}"#, decoder)
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        try expectSame(Wrapped<Int>.self, deep, decoder)
        // Tries one shape, then another: the first throw sends the text to JSONDecoder.
        try expectSame(Either.self, #""text""#, decoder)
        #expect(decoder.fallbacks == 19, "each text above but the one with a null")
    }

    @Test("20,000 mutated texts: the same value as JSONDecoder's, or its error, never a crash")
    func mutatedTexts() throws {
        var generator = SplitMix(state: 2026)
        let decoder = MailDecoder()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // the same texts every run
        let seeds = try (0..<20).map { _ in
            Array(try encoder.encode(Shapes.random(depth: 3, using: &generator)))
        }
        for round in 0..<(Int(ProcessInfo.processInfo.environment["MUTATIONS"] ?? "") ?? 20_000) {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let at = Int.random(in: 0..<max(bytes.count, 1), using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0 where !bytes.isEmpty: bytes[at] = Self.interesting.randomElement(using: &generator)!
                case 1 where !bytes.isEmpty: bytes.remove(at: at)
                case 2: bytes.insert(Self.interesting.randomElement(using: &generator)!, at: min(at, bytes.count))
                default: bytes = Array(bytes.prefix(at))
                }
            }
            try expectSame(Shapes.self, String(decoding: bytes, as: UTF8.self), decoder)
        }
    }

    /// Bytes that change what JSON means.
    private static let interesting = Array(#"{}[]":,.-+eE0129tfnul\/ "#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9]

    private func expectSame<T: Decodable & Equatable>(
        _ type: T.Type,
        _ text: String,
        _ decoder: MailDecoder,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reference = Result { try JSONDecoder().decode(type, from: Data(text.utf8)) }
        let decoded = Result { try decoder.decode(type, from: Substring(text)) }
        switch (decoded, reference) {
        case (.success(let value), .success(let expected)):
            #expect(value == expected, "\(text)", sourceLocation: sourceLocation)
        case (.failure(let error), .failure):
            // The error is JSONDecoder's own. Which one it throws for a text with two faults can
            // differ from call to call: it decodes an object's keys in its dictionary's order.
            #expect(error is DecodingError, "\(text)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(text): \(decoded) against JSONDecoder's \(reference)", sourceLocation: sourceLocation)
        }
    }
}

private struct Wrapped<Value: Codable & Equatable>: Codable, Equatable {
    let value: Value
}

private struct Plain: Codable, Equatable {
    let text: String
    let number: Int
    let flag: Bool
}

private enum Either: Decodable, Equatable {
    case number(Int)
    case text(String)

    init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let number = try? single.decode(Int.self) {
            self = .number(number)
        } else {
            self = .text(try single.decode(String.self))
        }
    }
}

/// Every shape the relay's mails take: nested structs, arrays, optionals, dictionaries, enums
/// with payloads, and the Foundation types JSONEncoder writes its own way.
private struct Shapes: Codable, Equatable {
    enum Kind: Codable, Equatable {
        case none
        case one(Int)
        case named(text: String, at: Date)
    }

    var texts: [String]
    var integers: [Int64]
    var unsigned: UInt16
    var numbers: [Double]
    var flag: Bool?
    var data: Data
    var url: URL
    var byText: [String: Int]
    var byNumber: [Int: String]
    var kind: Kind
    var nested: [Shapes]

    static func random(depth: Int, using generator: inout SplitMix) -> Shapes {
        func text() -> String { generator.text(below: 10) }
        let count = Int.random(in: 0..<4, using: &generator)
        return Shapes(
            texts: (0..<count).map { _ in text() },
            integers: (0..<count).map { _ in Int64.random(in: .min ... .max, using: &generator) },
            unsigned: UInt16.random(in: 0 ... .max, using: &generator),
            numbers: (0..<count).map { _ in
                Double(
                    sign: Bool.random(using: &generator) ? .plus : .minus,
                    exponentBitPattern: UInt.random(in: 900...1100, using: &generator),
                    significandBitPattern: generator.next() >> 12
                )
            },
            flag: [true, false, nil].randomElement(using: &generator)!,
            data: Data((0..<count * 3).map { _ in UInt8.random(in: 0 ... .max, using: &generator) }),
            url: URL(string: "https://example.com/\(count)?q=\(UInt16.random(in: 0 ... .max, using: &generator))")!,
            byText: Dictionary((0..<count).map { _ in (text(), Int.random(in: -99...99, using: &generator)) }) { a, _ in
                a
            },
            byNumber: Dictionary((0..<count).map { _ in (Int.random(in: -99...99, using: &generator), text()) }) {
                a,
                _ in a
            },
            kind: [
                Kind.none, .one(Int.random(in: .min ... .max, using: &generator)),
                .named(text: text(), at: Date(timeIntervalSinceReferenceDate: Double(count) * 1_000.125)),
            ].randomElement(using: &generator)!,
            nested: depth > 0 ? (0..<count).map { _ in random(depth: depth - 1, using: &generator) } : []
        )
    }
}
