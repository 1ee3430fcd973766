@_spi(AsyncMailInternal) import AsyncMail
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wake-ups between the processes that share a relay's database: each listens on a Unix datagram
/// socket in a folder beside the database (mode 0700), and a writer sends one byte to every other
/// socket there after its commit. So a reader learns of new rows at once, not at its next check
/// (which stays as the safety net for a lost wake-up: `RowFeed`).
///
/// A datagram carries nothing but "look again" (one byte: 2 for presence, 1 for rows): a reader
/// that gets one reads the table, which is what it trusts. One of any other size is not what a
/// relay sends: counted, never acted on. A
/// socket whose process has gone (a refused send) is removed by the next writer.
package final class WakeUps: Sendable {
    /// The folder of sockets: the database's path and `.wake`.
    package let directory: String
    /// This process's socket in it.
    package let path: String
    /// One element per wake-up for new rows, coalesced while nobody reads.
    package let arrivals: AsyncStream<Void>
    /// One element per wake-up for presence, coalesced while nobody reads.
    package let presenceArrivals: AsyncStream<Void>
    /// The socket this process receives on, read by a thread of its own (``Listener``).
    private let listener: Listener
    private let counts: Counts
    /// Wakes this process's own reader (``wakeHere()``).
    private let wake: AsyncStream<Void>.Continuation
    /// The other sockets, as ``peers()`` last listed them.
    private let known = Guarded<KnownPeers?>(nil)
    /// The socket nudges are sent from, bound to `name.send` beside `name.sock`, so a peer sees
    /// where a nudge came from.
    private let sender: Int32

    /// What the sockets saw.
    final class Counts: Sendable {
        let received = Atomic(0)
        let rejected = Atomic(0)
        let staleRemoved = Atomic(0)
        /// Each new count of ``received``, newest kept: what a test waits on (`SQLiteRelay+Testing`).
        let receivedCounts = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))

        func receive() {
            receivedCounts.continuation.yield(received.add(1, ordering: .relaxed).newValue)
        }
    }

    package var received: Int { counts.received.load(ordering: .relaxed) }
    /// Each new count of ``received``, the newest kept: for tests, which wait on it.
    package var receivedCounts: AsyncStream<Int> { counts.receivedCounts.stream }
    package var rejected: Int { counts.rejected.load(ordering: .relaxed) }
    package var staleRemoved: Int { counts.staleRemoved.load(ordering: .relaxed) }

    /// What a nudge asks the other processes to look at.
    package enum Nudge: UInt8, Sendable {
        /// New rows of mail.
        case rows = 1
        /// A presence topic changed.
        case presence = 2
    }

    private init(
        directory: String,
        path: String,
        arrivals: AsyncStream<Void>,
        presenceArrivals: AsyncStream<Void>,
        wake: AsyncStream<Void>.Continuation,
        listener: Listener,
        counts: Counts,
        sender: Int32
    ) {
        self.directory = directory
        self.path = path
        self.arrivals = arrivals
        self.presenceArrivals = presenceArrivals
        self.wake = wake
        self.listener = listener
        self.counts = counts
        self.sender = sender
    }

    /// The path of the socket `name` binds beside `database`.
    package static func socketPath(beside database: String, name: String) -> String {
        database + ".wake/" + name + ".sock"
    }

    /// Binds this process's socket, `name.sock`, in the folder beside `database`.
    package static func open(
        beside database: String,
        name: String
    ) async throws -> WakeUps {
        let directory = database + ".wake"
        try OwnerOnlyFiles.directory(directory)
        let path = socketPath(beside: database, name: name)
        // sun_path holds 108 bytes on Linux, 104 on Darwin, with its terminating zero.
        guard path.utf8.count < 104 else {
            throw RelayFileError(
                .pathTooLong,
                path: path,
                reason: "a wake-up socket's path must be under 104 bytes: put the database in a shorter folder"
            )
        }
        let counts = Counts()
        let (arrivals, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (presenceArrivals, presence) = AsyncStream.makeStream(
            of: Void.self,
            bufferingPolicy: .bufferingNewest(1)
        )
        let listener = try Listener.bind(path, counts: counts, rows: continuation, presence: presence)
        let sendPath = directory + "/" + name + ".send"
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard sender >= 0,
            Self.withAddress(
                sendPath,
                {
                    unlink(sendPath)
                    return bind(sender, $0, $1)
                }
            ) == 0
        else {
            let reason = String(cString: strerror(errno))
            if sender >= 0 { _ = SystemCalls.close(sender) }
            await listener.close()
            unlink(path)
            throw RelayFileError(
                .unavailable,
                path: sendPath,
                reason: "cannot bind the socket wake-ups are sent from: \(reason)"
            )
        }
        return WakeUps(
            directory: directory,
            path: path,
            arrivals: arrivals,
            presenceArrivals: presenceArrivals,
            wake: continuation,
            listener: listener,
            counts: counts,
            sender: sender
        )
    }

    /// Sends one byte to every other socket in the folder; removes those nobody listens on.
    ///
    /// Sent from a plain socket of its own, never blocking: a refused send (nobody bound, its
    /// process gone) must not touch the channel that receives, and a full queue means the peer
    /// has a wake-up pending already.
    package func nudge(_ nudge: Nudge = .rows) {
        var byte = nudge.rawValue
        for peer in peers() {
            let sent = Self.withAddress(peer) { address, length in
                sendto(sender, &byte, 1, Int32(MSG_DONTWAIT), address, length)
            }
            if sent < 0, errno == ECONNREFUSED {
                // Nobody is bound to it: its process has gone. (One that comes back binds anew.)
                if unlink(peer) == 0 { counts.staleRemoved.add(1, ordering: .relaxed) }
                unlink(String(peer.dropLast(".sock".count)) + ".send")
            }
        }
    }

    /// The other sockets in the folder, listed again only when the folder changed (a socket
    /// bound or removed changes its modification time) or the last list is a second old: a
    /// nudge is on the path every post takes, and a listing is several system calls where a
    /// `stat` is one. The second bounds what a change within the file system's clock tick hides
    /// from the time: a process that binds then is nudged within a second, as its own check
    /// would find the rows anyway.
    private func peers() -> [String] {
        let modified = Self.modified(directory)
        let now = ContinuousClock.now
        let kept = known.withLock { known -> [String]? in
            guard let known, let modified, known.modified == modified, now - known.listed < .seconds(1) else {
                return nil
            }
            return known.peers
        }
        if let kept { return kept }
        let peers = Self.sockets(in: directory).filter { $0 != path }
        // A folder whose time cannot be read is listed at every nudge.
        known.withLock { $0 = modified.map { KnownPeers(listed: now, modified: $0, peers: peers) } }
        return peers
    }

    /// A file's modification time: seconds and nanoseconds.
    private typealias Modified = (Int, Int)

    /// `path`'s modification time, or nil when it cannot be read.
    private static func modified(_ path: String) -> Modified? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        return (info.st_mtimespec.tv_sec, info.st_mtimespec.tv_nsec)
        #else
        return (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
        #endif
    }

    /// The other sockets as last listed, when, and the folder's modification time then.
    private struct KnownPeers {
        let listed: ContinuousClock.Instant
        let modified: Modified
        let peers: [String]
    }

    /// Wakes this process's own reader, with no datagram: after a commit whose rows this
    /// process delivers too (a type with host-wide positions), and for the row feed's check.
    package func wakeHere() {
        wake.yield()
    }

    /// Calls `body` with `path` as a Unix socket address; -1 for a path too long for one.
    private static func withAddress<Result: BinaryInteger>(
        _ path: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return -1 }
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: bytes)
            sunPath[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// Unbinds this process's socket and removes its file.
    package func close() async {
        await listener.close()
        unlink(path)
        _ = SystemCalls.close(sender)
        unlink(String(path.dropLast(".sock".count)) + ".send")
    }

    /// Unbinds without removing the file: what a process killed with `SIGKILL` leaves. For tests.
    func closeLeavingFile() async throws {
        await listener.close()
    }

    /// The sockets in `directory`: its `*.sock` entries.
    private static func sockets(in directory: String) -> [String] {
        guard let folder = opendir(directory) else { return [] }
        defer { closedir(folder) }
        var found: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(".sock") { found.append(directory + "/" + name) }
        }
        return found
    }

    /// This process's socket, read by a thread of its own that blocks in `recv`: each one-byte
    /// datagram is a wake-up; any other is counted, never acted on.
    ///
    /// Not a SwiftNIO datagram channel: a datagram from an unbound socket has no source address,
    /// which the channel cannot read, and it stopped reading for good on the first one; anyone
    /// who could reach the socket could end this process's wake-ups. `recv` needs no address.
    final class Listener: Sendable {
        private let socket: Int32
        private let closed = Atomic(false)
        /// Whether the thread has closed the socket, and who waits for it to.
        private let exit = Guarded<(done: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        private let path: String

        private init(socket: Int32, path: String) {
            self.socket = socket
            self.path = path
        }

        static func bind(
            _ path: String,
            counts: Counts,
            rows: AsyncStream<Void>.Continuation,
            presence: AsyncStream<Void>.Continuation
        ) throws(RelayFileError) -> Listener {
            let descriptor = SystemCalls.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            guard descriptor >= 0 else {
                throw RelayFileError(.unavailable, path: path, reason: String(cString: strerror(errno)))
            }
            unlink(path)  // a socket file left by a process that was killed
            guard WakeUps.withAddress(path, { SystemCalls.bind(descriptor, $0, $1) }) == 0 else {
                let reason = String(cString: strerror(errno))
                _ = SystemCalls.close(descriptor)
                throw RelayFileError(.unavailable, path: path, reason: "cannot bind the wake-up socket: \(reason)")
            }
            let listener = Listener(socket: descriptor, path: path)
            let thread = Thread { listener.read(counts: counts, rows: rows, presence: presence) }
            thread.name = "AsyncMail wake-ups"
            thread.start()
            return listener
        }

        private func read(
            counts: Counts,
            rows: AsyncStream<Void>.Continuation,
            presence: AsyncStream<Void>.Continuation
        ) {
            // Two bytes: a datagram of one is a wake-up, one of any other size (cut to two) is not.
            var buffer: (UInt8, UInt8) = (0, 0)
            while !closed.load(ordering: .acquiring) {
                let received = withUnsafeMutableBytes(of: &buffer) { bytes in
                    recv(socket, bytes.baseAddress, bytes.count, 0)
                }
                if received < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if closed.load(ordering: .acquiring) { break }
                if received == 1 {
                    counts.receive()
                    if buffer.0 == WakeUps.Nudge.presence.rawValue { presence.yield() } else { rows.yield() }
                } else {
                    counts.rejected.add(1, ordering: .relaxed)
                }
            }
            _ = SystemCalls.close(socket)
            let waiting = exit.withLock { exit in
                exit.done = true
                defer { exit.waiting = [] }
                return exit.waiting
            }
            for waiter in waiting { waiter.resume() }
            rows.finish()
            presence.finish()
        }

        /// Stops the thread, and returns once it has closed the socket: a datagram to its own
        /// socket wakes it from `recv`.
        func close() async {
            if !closed.exchange(true, ordering: .acquiringAndReleasing) {
                let waker = SystemCalls.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
                var byte: UInt8 = 0
                let sent =
                    waker < 0
                    ? -1 : WakeUps.withAddress(path) { address, length in sendto(waker, &byte, 1, 0, address, length) }
                if waker >= 0 { _ = SystemCalls.close(waker) }
                // The socket's file removed under it: shutting the socket down ends `recv` too.
                if sent < 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
            }
            // Moments: the thread is woken at once. Not cancellable: the socket must be closed.
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let done = exit.withLock { exit in
                    if !exit.done { exit.waiting.append(waiter) }
                    return exit.done
                }
                if done { waiter.resume() }
            }
        }
    }
}

/// The C library's calls whose names a type's own methods shadow.
private enum SystemCalls {
    #if canImport(Glibc)
    static let socket = Glibc.socket
    static let bind = Glibc.bind
    static let close = Glibc.close
    #elseif canImport(Musl)
    static let socket = Musl.socket
    static let bind = Musl.bind
    static let close = Musl.close
    #elseif canImport(Darwin)
    static let socket = Darwin.socket
    static let bind = Darwin.bind
    static let close = Darwin.close
    #endif
}
