import SQLiteNIO

extension SQLiteData {
    /// The value when it is stored as an integer; nil for any other type.
    ///
    /// Not sqlite-nio's `integer`, which converts: a REAL over `Int.max` traps in that
    /// conversion, and any program of the file's owner can store one where a relay reads a number.
    var storedInteger: Int64? {
        if case .integer(let value) = self { Int64(value) } else { nil }
    }

    /// The value when it is stored as text; nil for any other type (sqlite-nio's `string` turns
    /// numbers into text).
    var storedText: String? {
        if case .text(let value) = self { value } else { nil }
    }
}
