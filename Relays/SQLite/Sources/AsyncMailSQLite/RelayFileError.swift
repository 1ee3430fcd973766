/// Why the relay's database file, or the folder of wake-up sockets beside it, cannot be used.
///
/// A struct with a code, so that new reasons do not break a `switch` over the ones handled.
/// Internal until the relay that throws it is public (#45).
package struct RelayFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the file or folder.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// Another user owns it, or others may write to it: rows or wake-ups could come from them.
        package static let unsafePermissions = Code("unsafePermissions")
        /// It could not be created or opened (the folder missing, no right to it, the disk full).
        package static let unavailable = Code("unavailable")
        /// The database was deleted or replaced while the relay had it open: the relay would go
        /// on with a file no other process reads.
        package static let replaced = Code("replaced")
        /// The path is longer than a Unix socket's path may be (about 100 bytes).
        package static let pathTooLong = Code("pathTooLong")

        package var description: String { name }
    }

    /// What was wrong.
    package let code: Code
    /// The file or folder.
    package let path: String
    /// Why, in words, with what fixes it.
    package let reason: String

    init(_ code: Code, path: String, reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    package var description: String { "\(path): \(reason)" }
}
