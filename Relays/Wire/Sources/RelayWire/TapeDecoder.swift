import Foundation

/// The decoder a value's `init(from:)` is given: it reads one node of a ``JSONTape``.
struct TapeDecoder: Decoder {
    // Three words, the inline size of an `any Decoder`: a larger decoder would be boxed on the
    // heap for every value decoded.
    let tape: JSONTape
    let path: LazyCodingPath
    private let nodeIndex: Int32
    var node: Int { Int(nodeIndex) }
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { tape.userInfo }

    init(tape: JSONTape, node: Int, path: LazyCodingPath) {
        self.tape = tape
        self.path = path
        self.nodeIndex = Int32(node)  // the tape's nodes are fewer than its bytes, under Int32.max
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try TapeKeyed<Key>(tape: tape, node: node, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard tape.nodes[node].kind == .array else { throw tape.unsupported() }
        return TapeUnkeyed(tape: tape, node: node, codingPath: path.keys)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        TapeSingleValue(tape: tape, node: node, path: path)
    }

    /// `type` read from `node`: the types `JSONDecoder` reads its own way, or the type's `init(from:)`.
    static func decode<T: Decodable>(_ type: T.Type, tape: JSONTape, node: Int, path: LazyCodingPath) throws -> T {
        if T.self == String.self { return try tape.string(at: node) as! T }
        if T.self == Int.self { return try tape.integer(at: node, as: Int.self) as! T }
        if T.self == Bool.self { return try tape.bool(at: node) as! T }
        if T.self == Double.self { return try tape.double(at: node) as! T }
        if T.self == Data.self {
            guard let data = Data(base64Encoded: try tape.string(at: node)) else { throw tape.unsupported() }
            return data as! T
        }
        if T.self == URL.self {
            guard let url = URL(string: try tape.string(at: node)) else { throw tape.unsupported() }
            return url as! T
        }
        // Foundation reads a Decimal's text with a parser of its own; a Float may round twice.
        if T.self == Decimal.self || T.self == Float.self { throw tape.unsupported() }
        if tape.nodes[node].kind == .array, let array = T.self as? any TapeArray.Type {
            return try array.decode(from: tape, node: node, path: path) as! T
        }
        return try T(from: TapeDecoder(tape: tape, node: node, path: path))
    }
}

/// An array the tape reads element by element itself, as `Array.init(from:)` does, without an
/// `UnkeyedDecodingContainer` existential between it and each element (an envelope's mails).
private protocol TapeArray {
    static func decode(from tape: JSONTape, node: Int, path: LazyCodingPath) throws -> Self
}

extension Array: TapeArray where Element: Decodable {
    // `fileprivate`: the compiler requires it of a private protocol's witness.
    fileprivate static func decode(from tape: JSONTape, node: Int, path: LazyCodingPath) throws -> Self {
        let codingPath = path.keys
        let count = Int(tape.nodes[node].count)
        var elements: [Element] = []
        elements.reserveCapacity(count)
        var element = node + 1
        for index in 0..<count {
            let path = LazyCodingPath(parent: codingPath, element: index)
            elements.append(try TapeDecoder.decode(Element.self, tape: tape, node: element, path: path))
            element = Int(tape.nodes[element].next)
        }
        return elements
    }
}

/// A coding path made only when something asks for it: a mail's fields never do. It is the
/// parent's keys, made once per array, and the index of an element in it, if it is one.
struct LazyCodingPath {
    static let root = LazyCodingPath(parent: [])

    let parent: [any CodingKey]
    /// The element's index in the array `parent` names; -1 when the path is `parent`.
    let element: Int32

    init(parent: [any CodingKey], element: Int = -1) {
        self.parent = parent
        self.element = Int32(element)  // an array has fewer elements than the tape has nodes
    }

    var keys: [any CodingKey] { element < 0 ? parent : parent + [IndexKey(Int(element))] }

    func appending(_ key: any CodingKey) -> LazyCodingPath { LazyCodingPath(parent: keys + [key]) }
}

private struct TapeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let tape: JSONTape
    let path: LazyCodingPath
    var codingPath: [any CodingKey] { path.keys }
    /// The object's node.
    private let node: Int
    /// The value nodes by key, for an object too large to search key by key.
    private let index: [String: Int]?

    /// Objects up to this many keys are searched key by key: cheaper than hashing each key.
    private static var searchedKeys: Int { 16 }

    init(tape: JSONTape, node: Int, path: LazyCodingPath) throws {
        guard tape.nodes[node].kind == .object else { throw tape.unsupported() }
        self.tape = tape
        self.path = path
        self.node = node
        // A key twice is left to JSONDecoder, whichever value it keeps.
        let count = Int(tape.nodes[node].count)
        if count > Self.searchedKeys {
            var index: [String: Int] = [:]
            var key = node + 1
            for _ in 0..<count {
                guard index.updateValue(key + 1, forKey: try tape.string(at: key)) == nil else {
                    throw tape.unsupported()
                }
                key = tape.nextKey(after: key)
            }
            self.index = index
        } else {
            index = nil
            var key = node + 1
            for position in 0..<count where position > 0 {
                key = tape.nextKey(after: key)
                let text = try tape.string(at: key)
                var other = node + 1
                for _ in 0..<position {
                    if tape.key(at: other, is: text) { throw tape.unsupported() }
                    other = tape.nextKey(after: other)
                }
            }
        }
    }

    var allKeys: [Key] {
        var keys: [Key] = []
        var key = node + 1
        for _ in 0..<tape.nodes[node].count {
            if let text = try? tape.string(at: key), let codingKey = Key(stringValue: text) { keys.append(codingKey) }
            key = tape.nextKey(after: key)
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { valueNode(for: key) != nil }

    private func valueNode(for key: Key) -> Int? {
        let name = key.stringValue
        if let index { return index[name] }
        var candidate = node + 1
        for _ in 0..<tape.nodes[node].count {
            if tape.key(at: candidate, is: name) { return candidate + 1 }
            candidate = tape.nextKey(after: candidate)
        }
        return nil
    }

    private func node(_ key: Key) throws -> Int {
        guard let node = valueNode(for: key) else { throw tape.unsupported() }
        return node
    }

    func decodeNil(forKey key: Key) throws -> Bool { tape.nodes[try node(key)].kind == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try tape.bool(at: node(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try tape.string(at: node(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try tape.double(at: node(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw tape.unsupported() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try tape.integer(at: node(key), as: type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try tape.integer(at: node(key), as: type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try tape.integer(at: node(key), as: type) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { throw tape.unsupported() }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { throw tape.unsupported() }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try TapeDecoder.decode(type, tape: tape, node: node(key), path: path.appending(key))
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try TapeKeyed<NestedKey>(tape: tape, node: node(key), path: path.appending(key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let node = try node(key)
        guard tape.nodes[node].kind == .array else { throw tape.unsupported() }
        return TapeUnkeyed(tape: tape, node: node, codingPath: path.appending(key).keys)
    }

    func superDecoder() throws -> any Decoder { throw tape.unsupported() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw tape.unsupported() }
}

private struct TapeUnkeyed: UnkeyedDecodingContainer {
    let tape: JSONTape
    let codingPath: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    /// The node of the element at `currentIndex`.
    private var node: Int

    init(tape: JSONTape, node: Int, codingPath: [any CodingKey]) {
        self.tape = tape
        self.codingPath = codingPath
        self.count = Int(tape.nodes[node].count)
        self.node = node + 1
    }

    var isAtEnd: Bool { currentIndex >= count! }

    /// The current element's node, and the index moved past it.
    private mutating func next() throws -> Int {
        guard !isAtEnd else { throw tape.unsupported() }
        let current = node
        node = Int(tape.nodes[node].next)
        currentIndex += 1
        return current
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw tape.unsupported() }
        guard tape.nodes[node].kind == .null else { return false }
        _ = try next()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: next()) }
    mutating func decode(_ type: String.Type) throws -> String { try tape.string(at: next()) }
    mutating func decode(_ type: Double.Type) throws -> Double { try tape.double(at: next()) }
    mutating func decode(_ type: Float.Type) throws -> Float { throw tape.unsupported() }
    mutating func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: next(), as: type) }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { throw tape.unsupported() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { throw tape.unsupported() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = LazyCodingPath(parent: codingPath, element: currentIndex)
        return try TapeDecoder.decode(type, tape: tape, node: next(), path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let path = LazyCodingPath(parent: codingPath, element: currentIndex)
        return KeyedDecodingContainer(
            try TapeKeyed<NestedKey>(tape: tape, node: next(), path: path)
        )
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let index = IndexKey(currentIndex)
        let node = try next()
        guard tape.nodes[node].kind == .array else { throw tape.unsupported() }
        return TapeUnkeyed(tape: tape, node: node, codingPath: codingPath + [index])
    }

    mutating func superDecoder() throws -> any Decoder { throw tape.unsupported() }
}

private struct TapeSingleValue: SingleValueDecodingContainer {
    let tape: JSONTape
    let node: Int
    let path: LazyCodingPath
    var codingPath: [any CodingKey] { path.keys }

    func decodeNil() -> Bool { tape.nodes[node].kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: node) }
    func decode(_ type: String.Type) throws -> String { try tape.string(at: node) }
    func decode(_ type: Double.Type) throws -> Double { try tape.double(at: node) }
    func decode(_ type: Float.Type) throws -> Float { throw tape.unsupported() }
    func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: node, as: type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: node, as: type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: node, as: type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: node, as: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: node, as: type) }
    func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: node, as: type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: node, as: type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: node, as: type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: node, as: type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: node, as: type) }
    func decode(_ type: Int128.Type) throws -> Int128 { throw tape.unsupported() }
    func decode(_ type: UInt128.Type) throws -> UInt128 { throw tape.unsupported() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try TapeDecoder.decode(type, tape: tape, node: node, path: path)
    }
}
