import NIOCore
import NIOPosix
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
/// (the database's `data_version`, which stays as the safety net for a lost wake-up).
///
/// A datagram carries nothing but "look again": a reader that gets one reads the table, which is
/// what it trusts. One of any other size is not what a relay sends: counted, never acted on. A
/// socket whose process has gone (a refused send) is removed by the next writer.
package final class WakeUps: Sendable {
    /// The folder of sockets: the database's path and `.wake`.
    package let directory: String
    /// This process's socket in it.
    package let path: String
    /// One element per wake-up, coalesced while nobody reads.
    package let arrivals: AsyncStream<Void>
    private let channel: any Channel
    private let counts: Counts
    /// Wakes this process's own reader (``wakeHere()``).
    private let wake: AsyncStream<Void>.Continuation
    /// The socket nudges are sent from, bound to `name.send` beside `name.sock`: a datagram from
    /// an unbound socket has no source address, which SwiftNIO's receiving channel cannot read.
    private let sender: Int32

    /// What the sockets saw.
    final class Counts: Sendable {
        let received = Atomic(0)
        let rejected = Atomic(0)
        let staleRemoved = Atomic(0)
    }

    package var received: Int { counts.received.load(ordering: .relaxed) }
    package var rejected: Int { counts.rejected.load(ordering: .relaxed) }
    package var staleRemoved: Int { counts.staleRemoved.load(ordering: .relaxed) }

    private init(
        directory: String,
        path: String,
        arrivals: AsyncStream<Void>,
        wake: AsyncStream<Void>.Continuation,
        channel: any Channel,
        counts: Counts,
        sender: Int32
    ) {
        self.directory = directory
        self.path = path
        self.arrivals = arrivals
        self.wake = wake
        self.channel = channel
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
        name: String,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
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
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Receiver(continuation: continuation, counts: counts))
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
            .get()
        channel.closeFuture.whenComplete { _ in continuation.finish() }
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
            try? await channel.close()
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
            wake: continuation,
            channel: channel,
            counts: counts,
            sender: sender
        )
    }

    /// Sends one byte to every other socket in the folder; removes those nobody listens on.
    ///
    /// Sent from a plain socket of its own, never blocking: a refused send (nobody bound, its
    /// process gone) must not touch the channel that receives, and a full queue means the peer
    /// has a wake-up pending already.
    package func nudge() {
        var byte: UInt8 = 1
        for peer in Self.sockets(in: directory) where peer != path {
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

    /// Wakes this process's own reader, with no datagram: after a commit whose rows this
    /// process delivers too (a type with host-wide positions).
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
        try? await channel.close()
        unlink(path)
        _ = SystemCalls.close(sender)
        unlink(String(path.dropLast(".sock".count)) + ".send")
    }

    /// Unbinds without removing the file: what a process killed with `SIGKILL` leaves. For tests.
    func closeLeavingFile() async throws {
        let moved = path + ".closing"
        rename(path, moved)  // NIO removes the file it bound when the channel closes
        try await channel.close()
        rename(moved, path)
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

    /// Turns each one-byte datagram into a wake-up; counts any other.
    private final class Receiver: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>

        let continuation: AsyncStream<Void>.Continuation
        let counts: Counts

        init(continuation: AsyncStream<Void>.Continuation, counts: Counts) {
            self.continuation = continuation
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = Self.unwrapInboundIn(data)
            guard envelope.data.readableBytes == 1 else {
                counts.rejected.add(1, ordering: .relaxed)
                return
            }
            counts.received.add(1, ordering: .relaxed)
            continuation.yield()
        }
    }
}

/// The C library's calls whose names a type's own methods shadow.
private enum SystemCalls {
    #if canImport(Glibc)
    static let close = Glibc.close
    #elseif canImport(Musl)
    static let close = Musl.close
    #elseif canImport(Darwin)
    static let close = Darwin.close
    #endif
}
