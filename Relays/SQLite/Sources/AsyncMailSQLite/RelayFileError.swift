/// Why the relay's database file, or the folder of wake-up sockets beside it, cannot be used.
///
/// A struct with a code, so that new reasons do not break a `switch` over the ones handled.
/// Internal until the relay that throws it is public (#45).
struct RelayFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the file or folder.
    struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// Another user owns it, or others may write to it: rows or wake-ups could come from them.
        static let unsafePermissions = Code("unsafePermissions")
        /// It could not be created or opened (the folder missing, no right to it, the disk full).
        static let unavailable = Code("unavailable")
        /// The path is longer than a Unix socket's path may be (about 100 bytes).
        static let pathTooLong = Code("pathTooLong")

        var description: String { name }
    }

    /// What was wrong.
    let code: Code
    /// The file or folder.
    let path: String
    /// Why, in words, with what fixes it.
    let reason: String

    init(_ code: Code, path: String, reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    var description: String { "\(path): \(reason)" }
}
