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
/// The thread that receives them also runs the row feed's task (``executor``): a row's wake-up
/// resumes the reader on the thread it arrived on, with no pool thread woken for it.
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
    let listener: Listener
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

    /// The executor the row feed runs on: the thread that receives the wake-ups (``Listener``).
    package var executor: any TaskExecutor { listener }

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

    /// This process's socket, read by a thread of its own, which is also the executor the row
    /// feed runs on (``executor``): each one-byte datagram is a wake-up; any other is counted,
    /// never acted on.
    ///
    /// The thread waits in `poll` on the socket and on a pipe that a job enqueued from another
    /// thread writes to. A wake-up resumes the feed's task, whose job this same thread then
    /// runs: a row's wake-up reaches the feed with no pool thread woken for it, one turn fewer
    /// in the scheduler on a busy host (Benchmarks/README.md has the measurement).
    ///
    /// Not a SwiftNIO datagram channel: a datagram from an unbound socket has no source address,
    /// which the channel cannot read, and it stopped reading for good on the first one; anyone
    /// who could reach the socket could end this process's wake-ups. `recv` needs no address.
    final class Listener: TaskExecutor, Sendable {
        private let socket: Int32
        /// The pipe a job enqueued from another thread wakes the thread by: read end, write end.
        private let pipe: (read: Int32, write: Int32)
        private let closed = Atomic(false)
        /// The thread's identity while it runs (``isCurrentThread``).
        private let thread = Atomic<UInt>(0)
        /// The jobs to run, and whether the thread waits in `poll` (so an enqueue must wake it)
        /// or has exited (so an enqueue runs its job on a thread of its own).
        private let queue = Guarded<Queue>(Queue())
        /// Whether the thread has closed the socket, and who waits for it to.
        private let exit = Guarded<(done: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        private struct Queue {
            var jobs: [UnownedJob] = []
            var sleeping = false
            var exited = false
        }

        private init(socket: Int32, pipe: (read: Int32, write: Int32)) {
            self.socket = socket
            self.pipe = pipe
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
            var ends: [Int32] = [-1, -1]
            guard SystemCalls.pipe(&ends) == 0 else {
                let reason = String(cString: strerror(errno))
                _ = SystemCalls.close(descriptor)
                throw RelayFileError(
                    .unavailable,
                    path: path,
                    reason: "cannot make the wake-up thread's pipe: \(reason)"
                )
            }
            for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
            let listener = Listener(socket: descriptor, pipe: (ends[0], ends[1]))
            Thread { listener.read(counts: counts, rows: rows, presence: presence) }.start()
            return listener
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let (wake, exited) = queue.withLock { queue -> (Bool, Bool) in
                guard !queue.exited else { return (false, true) }
                queue.jobs.append(job)
                defer { queue.sleeping = false }
                return (queue.sleeping, false)
            }
            if wake {
                var byte: UInt8 = 0
                _ = SystemCalls.write(pipe.write, &byte, 1)
            }
            if exited {
                // Not expected (the relay stops its readers before it closes the socket), but a
                // job must run: on a thread of its own.
                let executor = asUnownedTaskExecutor()
                Thread { job.runSynchronously(on: executor) }.start()
            }
        }

        private func read(
            counts: Counts,
            rows: AsyncStream<Void>.Continuation,
            presence: AsyncStream<Void>.Continuation
        ) {
            thread.store(Self.currentThread(), ordering: .releasing)
            let executor = asUnownedTaskExecutor()
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: pipe.read, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                // The jobs first: a wake-up resumed the feed's task, whose job is here now.
                while true {
                    let jobs = queue.withLock { queue -> [UnownedJob] in
                        defer { queue.jobs = [] }
                        queue.sleeping = queue.jobs.isEmpty
                        return queue.jobs
                    }
                    if jobs.isEmpty { break }
                    for job in jobs { job.runSynchronously(on: executor) }
                }
                if closed.load(ordering: .acquiring) { break }
                let ready = poll(&descriptors, 2, -1)
                queue.withLock { $0.sleeping = false }
                if ready < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if descriptors[1].revents != 0 {
                    var drained: (UInt64, UInt64) = (0, 0)
                    _ = withUnsafeMutableBytes(of: &drained) { SystemCalls.read(pipe.read, $0.baseAddress, $0.count) }
                }
                if descriptors[0].revents != 0, !receive(counts: counts, rows: rows, presence: presence) { break }
            }
            _ = SystemCalls.close(socket)
            rows.finish()
            presence.finish()
            // The jobs enqueued until now, such as a reader's that the end of `rows` resumed,
            // run here; any later one on a thread of its own (``enqueue(_:)``).
            let jobs = queue.withLock { queue -> [UnownedJob] in
                queue.exited = true
                defer { queue.jobs = [] }
                return queue.jobs
            }
            for job in jobs { job.runSynchronously(on: executor) }
            thread.store(0, ordering: .releasing)  // the system may give its identity to a new thread
            let waiting = exit.withLock { exit in
                exit.done = true
                defer { exit.waiting = [] }
                return exit.waiting
            }
            for waiter in waiting { waiter.resume() }
        }

        // The pipe closes with the last reference, not with the thread: an enqueue that saw the
        // thread waiting still holds one while it writes.
        deinit {
            _ = SystemCalls.close(pipe.read)
            _ = SystemCalls.close(pipe.write)
        }

        /// Reads the datagrams waiting, at most 64, then returns to the jobs: a flood of datagrams
        /// (anyone who can write to the socket) must not keep the row feed from running. False
        /// once the socket failed or the listener closed.
        private func receive(
            counts: Counts,
            rows: AsyncStream<Void>.Continuation,
            presence: AsyncStream<Void>.Continuation
        ) -> Bool {
            // Two bytes: a datagram of one is a wake-up, one of any other size (cut to two) is not.
            var buffer: (UInt8, UInt8) = (0, 0)
            for _ in 0..<64 {
                let received = withUnsafeMutableBytes(of: &buffer) { bytes in
                    recv(socket, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT))
                }
                if received < 0 {
                    if errno == EINTR { continue }
                    return errno == EAGAIN || errno == EWOULDBLOCK
                }
                if closed.load(ordering: .acquiring) { return false }
                if received == 1 {
                    counts.receive()
                    if buffer.0 == WakeUps.Nudge.presence.rawValue { presence.yield() } else { rows.yield() }
                } else {
                    counts.rejected.add(1, ordering: .relaxed)
                }
            }
            return true
        }

        /// Whether the caller runs on the listener's thread.
        var isCurrentThread: Bool {
            thread.load(ordering: .acquiring) == Self.currentThread()
        }

        /// The calling thread's identity, as a number.
        private static func currentThread() -> UInt {
            #if canImport(Glibc)
            UInt(pthread_self())
            #else
            UInt(bitPattern: pthread_self())
            #endif
        }

        /// Stops the thread, and returns once it has closed the socket and run its last jobs:
        /// a job enqueued after runs on a thread of its own.
        func close() async {
            if !closed.exchange(true, ordering: .acquiringAndReleasing) {
                var byte: UInt8 = 0
                _ = SystemCalls.write(pipe.write, &byte, 1)
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
    static let pipe = Glibc.pipe
    static let read = Glibc.read
    static let write = Glibc.write
    #elseif canImport(Musl)
    static let socket = Musl.socket
    static let bind = Musl.bind
    static let close = Musl.close
    static let pipe = Musl.pipe
    static let read = Musl.read
    static let write = Musl.write
    #elseif canImport(Darwin)
    static let socket = Darwin.socket
    static let bind = Darwin.bind
    static let close = Darwin.close
    static let pipe = Darwin.pipe
    static let read = Darwin.read
    static let write = Darwin.write
    #endif
}
