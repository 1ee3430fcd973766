import AsyncMail
import Testing

/// A stand-in for a socket write to a client that stopped reading: it never returns on its own,
/// and ends only when its task is cancelled, as NIO's and Hummingbird's writers do.
private func stalled() async throws {
    let (never, _) = AsyncStream.makeStream(of: Void.self)
    for await _ in never {}
    throw CancellationError()
}

/// A connection with a backlog limit of 4 to a client that stopped reading and sends nothing,
/// once its outbound loop has taken one mail and is stuck writing it.
private func stalledConnection(on mailroom: Mailroom) async throws -> Task<ConnectionEnd, Never> {
    let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 4))
    let (writing, writeStarted) = AsyncStream.makeStream(of: Void.self)
    let connection = Task {
        await inbox.serve { _ in
            writeStarted.yield()
            try await stalled()
        } receiving: {
            try await stalled()
        }
    }
    _ = await mailroom.post(Ping(id: 0))  // taken by the outbound loop, whose write stalls
    _ = try await writing.first(1)
    return connection
}

@Suite("serve: a connection's two ends, whichever ends first")
struct ServeTests {
    @Test("a connection's end says its code and the error behind it, and its codes are distinct values")
    func endDescribesItself() {
        struct Reset: Error, CustomStringConvertible { var description: String { "connection reset" } }
        #expect(ConnectionEnd(.failed, error: Reset()).description == "failed: connection reset")
        #expect(ConnectionEnd(.cancelled).description == "cancelled")
        #expect(ConnectionEnd(.inboundEnded).error == nil)
        let codes: [ConnectionEnd.Code] = [
            .inboundEnded, .backlogLimitExceeded, .subscriptionEnded, .cancelled, .failed,
        ]
        #expect(Set(codes).count == 5)
        #expect(codes.map(\.description).allSatisfy { !$0.isEmpty })
    }

    @Test("mail reaches the connection in order, the connection's own posts included")
    func deliversInOrder() async throws {
        let mailroom = Mailroom()
        let room = RoomID("lobby")
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(room), backlog: .ending(past: 64))
        let received = Locked<[Int]>([])
        let (allReceived, signal) = AsyncStream.makeStream(of: Void.self)
        let end = try await withTimeout {
            await inbox.serve { ping in
                let count = received.withLock {
                    $0.append(ping.id)
                    return $0.count
                }
                if count == 10 { signal.yield() }
            } receiving: {
                // The client sends ten lines, then leaves once it has heard them all back.
                for id in 0..<10 { _ = await mailroom.post(Ping(id: id), from: room) }
                _ = await allReceived.untimedFirst(1)
            }
        }
        #expect("\(end)" == "inbound ended")
        #expect(received.withLock { $0 } == Array(0..<10))
        #expect(await mailroom.subscriberCount(Ping.self, from: .only(room)) == 0)
    }

    @Test("the client leaving ends delivery and removes the subscription, even with no mail")
    func inboundEnds() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 8))
        let end = try await withTimeout {
            await inbox.serve { _ in
            } receiving: {
            }
        }
        #expect(end.code == .inboundEnded, "ended with \(end)")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a client that stops reading is ended once past the limit, though the write never returns")
    func stalledClientIsEnded() async throws {
        let mailroom = Mailroom()
        let connection = try await stalledConnection(on: mailroom)
        var total = Receipt()
        for id in 1...5 { total += await mailroom.post(Ping(id: id)) }
        #expect(total == Receipt(delivered: 4, ended: 1))
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .backlogLimitExceeded)
        #expect((end.error as? BacklogLimitExceeded)?.limit == 4)
        #expect(end.description == "backlog limit of 4 exceeded")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("close() ends the connection, even while a write is stalled")
    func closeEnds() async throws {
        let mailroom = Mailroom()
        let connection = try await stalledConnection(on: mailroom)
        await mailroom.close()
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .subscriptionEnded, "ended with \(end)")
    }

    @Test("cancelling the serving task (server shutdown) ends both ends")
    func cancellationEnds() async throws {
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 4))
        let (receiving, receiveStarted) = AsyncStream.makeStream(of: Void.self)
        let connection = Task {
            await inbox.serve { _ in
            } receiving: {
                receiveStarted.yield()
                try await stalled()
            }
        }
        _ = try await receiving.first(1)
        connection.cancel()
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .cancelled, "ended with \(end)")
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a failing write ends the connection and says why")
    func failingWrite() async throws {
        struct SocketClosed: Error {}
        let mailroom = Mailroom()
        let inbox = await mailroom.subscribe(to: Ping.self, backlog: .ending(past: 4))
        let connection = Task {
            await inbox.serve { _ in
                throw SocketClosed()
            } receiving: {
                try await stalled()
            }
        }
        _ = await mailroom.post(Ping(id: 1))
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .failed)
        #expect(end.error is SocketClosed)
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a pinned object sender that goes away ends the connection")
    func departedSenderEnds() async throws {
        let mailroom = Mailroom()
        var player: Player? = Player("ann")
        let inbox = await mailroom.subscribe(to: Ping.self, from: .only(player!), backlog: .ending(past: 4))
        let connection = Task {
            await inbox.serve { _ in
            } receiving: {
                try await stalled()
            }
        }
        player = nil
        _ = await mailroom.subscriberCount(Ping.self)  // finds the departed sender
        let end = try await withTimeout { await connection.value }
        #expect(end.code == .subscriptionEnded, "ended with \(end)")
    }
}
