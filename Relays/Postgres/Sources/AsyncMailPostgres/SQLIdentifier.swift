/// The one rule for the names the relay hands PostgreSQL unquoted, its channel and its table: 1–63
/// bytes of lower-case ASCII letters, digits and `_`, starting with a letter or `_`.
///
/// PostgreSQL fails late and quietly on anything else: it truncates a name longer than 63 bytes
/// (on `LISTEN`, but rejects it on `NOTIFY`), and folds an unquoted mixed-case name to lower case,
/// so it never matches the original.
enum SQLIdentifier {
    /// Why `name` breaks the rule, in words for an error; nil when it keeps it.
    static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return "it is empty" }
        guard bytes.count <= 63 else { return "it is \(bytes.count) bytes; PostgreSQL allows 63" }
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        guard isLetter(bytes[0]) else { return "it must start with a lower-case letter or _" }
        guard bytes.allSatisfy({ isLetter($0) || isDigit($0) }) else {
            return "only lower-case a-z, 0-9 and _ are allowed"
        }
        return nil
    }
}
