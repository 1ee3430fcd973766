#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates the relay's files readable and writable by their owner only, and refuses ones that are
/// not: a database another user can write could hand the relay rows, and a folder of sockets
/// another user can enter could wake it for nothing. (SQLite gives its `-wal` and `-shm` files
/// the database's own mode.)
enum OwnerOnlyFiles {
    /// Makes `path` a file of this user's with mode 0600 unless it exists; checks it either way,
    /// and the folder it is in.
    static func file(_ path: String) throws(RelayFileError) {
        try checkFolder(of: path)
        let descriptor = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
        } else if errno != EEXIST {
            throw RelayFileError(
                .unavailable,
                path: path,
                reason: "cannot create it: \(String(cString: strerror(errno)))"
            )
        }
        try check(path, isDirectory: false)
    }

    /// Makes `path` a folder of this user's with mode 0700 unless it exists; checks it either way.
    static func directory(_ path: String) throws(RelayFileError) {
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw RelayFileError(
                .unavailable,
                path: path,
                reason: "cannot create it: \(String(cString: strerror(errno)))"
            )
        }
        try check(path, isDirectory: true)
    }

    /// The file's identity (device and inode), to tell it from one put in its place later.
    static func identity(of path: String) -> FileIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// Refuses a folder that other users may write to without the sticky bit (mode 0777, say):
    /// any of them could delete the database, or rename another file into its place, between
    /// two checks. With the sticky bit (`/tmp`'s 1777), only the file's owner may do either.
    private static func checkFolder(of path: String) throws(RelayFileError) {
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        var status = stat()
        guard stat(folder.isEmpty ? "/" : folder, &status) == 0 else { return }  // opening says why
        let mode = status.st_mode & 0o7777
        guard mode & 0o022 != 0, mode & mode_t(S_ISVTX) == 0 else { return }
        throw RelayFileError(
            .unsafePermissions,
            path: path,
            reason: "its folder \(folder.isEmpty ? "/" : folder) has mode \(String(mode, radix: 8)), which lets other "
                + "users delete the database or put another file in its place: chmod go-w the folder, "
                + "chmod +t it, or keep the database in a folder of your own"
        )
    }

    /// Refuses what another user owns, or what others may write to (a folder: enter either).
    private static func check(_ path: String, isDirectory: Bool) throws(RelayFileError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            throw RelayFileError(
                .unavailable,
                path: path,
                reason: "cannot read it: \(String(cString: strerror(errno)))"
            )
        }
        let kind = status.st_mode & S_IFMT
        guard kind == (isDirectory ? S_IFDIR : S_IFREG) else {
            throw RelayFileError(
                .unavailable,
                path: path,
                reason: "it is not a \(isDirectory ? "folder" : "regular file") (a link is not followed)"
            )
        }
        guard status.st_uid == getuid() else {
            throw RelayFileError(
                .unsafePermissions,
                path: path,
                reason: "it belongs to user \(status.st_uid), not to this process's user \(getuid())"
            )
        }
        let mode = status.st_mode & 0o777
        let forbidden: mode_t = isDirectory ? 0o077 : 0o022
        guard mode & forbidden == 0 else {
            let wanted = isDirectory ? "700" : "600"
            throw RelayFileError(
                .unsafePermissions,
                path: path,
                reason: "its mode is \(String(mode, radix: 8)), which lets other users "
                    + (isDirectory ? "into it" : "write to it") + ": chmod \(wanted) it"
            )
        }
    }
}

/// Which file a path named when it was opened: a relay whose database was deleted or replaced
/// goes on writing to the old, unlinked file, which no other process reads.
struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64
}
