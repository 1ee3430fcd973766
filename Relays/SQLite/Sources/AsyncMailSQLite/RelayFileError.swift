/// Why the relay's database file, or the folder of wake-up sockets beside it, cannot be used.
///
/// A struct with a code, so that new reasons do not break a `switch` over the ones handled.
/// Thrown by `SQLiteRelay.run()`.
public struct RelayFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the file or folder.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// Another user owns it, or others may write to it: rows or wake-ups could come from them.
        public static let unsafePermissions = Code("unsafePermissions")
        /// It could not be created or opened (the folder missing, no right to it, the disk full).
        public static let unavailable = Code("unavailable")
        /// The database was deleted or replaced while the relay had it open: the relay would go
        /// on with a file no other process reads.
        public static let replaced = Code("replaced")
        /// The path is longer than a Unix socket's path may be (about 100 bytes).
        public static let pathTooLong = Code("pathTooLong")

        public var description: String { name }
    }

    /// What was wrong.
    public let code: Code
    /// The file or folder.
    public let path: String
    /// Why, in words, with what fixes it.
    public let reason: String

    init(_ code: Code, path: String, reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
