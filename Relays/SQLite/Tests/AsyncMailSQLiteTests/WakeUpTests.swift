import AsyncMailTesting
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import AsyncMailSQLite

@Suite("Wake-ups: a datagram to every other process's socket after a commit")
struct WakeUpTests {
    @Test("a nudge wakes every other socket, not the sender's own; the folder is 0700")
    func nudgeWakesTheOthers() async throws {
        try await withTemporaryFolder { folder in
            let database = folder + "/relay.sqlite"
            let a = try await WakeUps.open(beside: database, name: "a")
            let b = try await WakeUps.open(beside: database, name: "b")
            let c = try await WakeUps.open(beside: database, name: "c")
            #expect(try mode(of: database + ".wake") == 0o700)
            a.nudge()
            _ = try await b.arrivals.first(1)
            _ = try await c.arrivals.first(1)
            #expect([a.received, b.received, c.received, b.rejected] as [Int] == [0, 1, 1, 0])
            for wakeUps in [a, b, c] { await wakeUps.close() }
            #expect(!FileManager.default.fileExists(atPath: a.path), "a closed socket's file is removed")
        }
    }

    @Test(
        "a socket bound after the sender listed the folder is nudged too: the list is read again once the folder changed"
    )
    func laterSocketsAreNudged() async throws {
        try await withTemporaryFolder { folder in
            let database = folder + "/relay.sqlite"
            let a = try await WakeUps.open(beside: database, name: "a")
            let b = try await WakeUps.open(beside: database, name: "b")
            a.nudge()
            _ = try await b.arrivals.first(1)
            let later = try await WakeUps.open(beside: database, name: "later")
            // Within the file system's clock tick the folder's time may not move: the list is
            // then read again a second after the last, so nudges reach it by then.
            let nudging = Task {
                while !Task.isCancelled {
                    a.nudge()
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            defer { nudging.cancel() }
            _ = try await later.arrivals.first(1)
            #expect(later.received >= 1)
            for wakeUps in [a, b, later] { await wakeUps.close() }
        }
    }

    @Test("a socket whose process has gone is removed by the next nudge; the others still wake")
    func staleSocketsAreRemoved() async throws {
        try await withTemporaryFolder { folder in
            let database = folder + "/relay.sqlite"
            let a = try await WakeUps.open(beside: database, name: "a")
            let b = try await WakeUps.open(beside: database, name: "b")
            // A socket file nobody is bound to, as a SIGKILLed process leaves.
            let stale = try await WakeUps.open(beside: database, name: "stale")
            let stalePath = stale.path
            try await stale.closeLeavingFile()
            a.nudge()
            _ = try await b.arrivals.first(1)
            #expect(a.staleRemoved == 1)
            #expect(!FileManager.default.fileExists(atPath: stalePath))
            await a.close()
            await b.close()
        }
    }

    @Test("a datagram that is not a relay's one byte is counted, and wakes nothing")
    func foreignDatagramsAreCounted() async throws {
        try await withTemporaryFolder { folder in
            let database = folder + "/relay.sqlite"
            let a = try await WakeUps.open(beside: database, name: "a")
            let sender = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(unixDomainSocketPath: database + ".wake/x.other", cleanupExistingSocketFile: true)
                .get()
            var buffer = sender.allocator.buffer(capacity: 4)
            buffer.writeString("junk")
            try await sender.writeAndFlush(
                AddressedEnvelope(remoteAddress: try SocketAddress(unixDomainSocketPath: a.path), data: buffer)
            )
            var one = sender.allocator.buffer(capacity: 1)
            one.writeInteger(UInt8(1))
            try await sender.writeAndFlush(
                AddressedEnvelope(remoteAddress: try SocketAddress(unixDomainSocketPath: a.path), data: one)
            )
            _ = try await a.arrivals.first(1)  // the one byte, after the junk: datagrams keep their order
            #expect(a.rejected == 1 && a.received == 1)
            try await sender.close()
            await a.close()
        }
    }

    @Test("the thread that receives the wake-ups runs the tasks that prefer it: a wake-up resumes its reader there")
    func readerRunsOnTheWakeUpThread() async throws {
        try await withTemporaryFolder { folder in
            let database = folder + "/relay.sqlite"
            let a = try await WakeUps.open(beside: database, name: "a")
            let b = try await WakeUps.open(beside: database, name: "b")
            let (before, after) = try await withTaskExecutorPreference(b.executor) {
                let before = b.isOnWakeUpThread
                a.nudge()
                _ = try await b.arrivals.first(1)
                return (before, b.isOnWakeUpThread)
            }
            #expect(before, "enqueued from another thread, it runs on the wake-up thread")
            #expect(after, "resumed by a wake-up, it runs on the wake-up thread")
            await a.close()
            await b.close()
        }
    }

    @Test("a task waiting on the wake-up thread ends when it closes; one that prefers it after still runs")
    func closedWakeUpThreadStillRunsJobs() async throws {
        try await withTemporaryFolder { folder in
            let wakeUps = try await WakeUps.open(beside: folder + "/relay.sqlite", name: "a")
            let (started, starting) = AsyncStream.makeStream(of: Void.self)
            let waiting = Task {
                await withTaskExecutorPreference(wakeUps.executor) {
                    var arrivals = wakeUps.arrivals.makeAsyncIterator()
                    starting.yield()
                    while await arrivals.next() != nil {}
                    return wakeUps.isOnWakeUpThread
                }
            }
            _ = try await started.first(1)
            await wakeUps.close()
            let ended = try await withTimeout { await waiting.value }
            #expect(ended, "the end of its arrivals resumes it on the wake-up thread")
            // The thread has gone: a job enqueued now runs on a thread of its own.
            let after = try await withTimeout {
                await withTaskExecutorPreference(wakeUps.executor) { wakeUps.isOnWakeUpThread }
            }
            #expect(!after)
        }
    }
}
