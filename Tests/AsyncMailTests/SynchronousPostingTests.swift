import Testing

@testable import AsyncMail

/// A synchronous call site, such as a channel handler or a callback: it cannot `await`.
func handleFromCallback(_ mailroom: Mailroom, id: Int) -> Receipt {
    mailroom.postSynchronously(Ping(id: id))
}

/// Posts from its deinit, which runs synchronously wherever the last reference goes.
final class Echo: Sendable {
    let mailroom: Mailroom
    let id: Int
    init(_ mailroom: Mailroom, id: Int) {
        self.mailroom = mailroom
        self.id = id
    }
    deinit { mailroom.postSynchronously(Ping(id: id)) }
}

struct Carried: Mail {
    let echo: Echo
}

@Suite("Posting from synchronous code")
struct SynchronousPostingTests {
    @Test("a synchronous post delivers before it returns, with the same receipt as post")
    func deliversWithAReceipt() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let lobby = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("lobby")))
        #expect(handleFromCallback(mailroom, id: 1) == Receipt(delivered: 1))
        #expect(mailroom.postSynchronously(Ping(id: 2), from: RoomID("lobby")) == Receipt(delivered: 2))
        #expect(mailroom.postSynchronously(contentsOf: [Ping(id: 3), Ping(id: 4)]) == Receipt(delivered: 2))
        #expect(mailroom.postSynchronously(contentsOf: [Ping(id: 5)], from: RoomID("lobby")) == Receipt(delivered: 2))
        #expect(try await pings.first(5).map(\.id) == [1, 2, 3, 4, 5])
        #expect(try await lobby.first(2).map(\.id) == [2, 5])
        await mailroom.close()
        #expect(mailroom.postSynchronously(Ping(id: 6)) == Receipt())
    }

    @Test("synchronous and asynchronous posts from one poster keep its order")
    func oneOrderWithPost() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        for id in 0..<100 {
            if id.isMultiple(of: 2) {
                await mailroom.post(Ping(id: id))
            } else {
                mailroom.postSynchronously(Ping(id: id))
            }
        }
        #expect(try await pings.first(100).map(\.id) == Array(0..<100))
    }

    @Test("a post from a filter is deferred until the post in progress is done, for everyone alike")
    func postFromAFilterIsDeferred() async throws {
        let mailroom = Mailroom()
        let receipts = Locked<[Receipt]>([])
        let first = await mailroom.subscribe(to: Ping.self)
        let posting = await mailroom.subscribe(to: Ping.self) { ping in
            if ping.id == 1 { receipts.withLock { $0.append(mailroom.postSynchronously(Ping(id: 100))) } }
            return true
        }
        let last = await mailroom.subscribe(to: Ping.self)
        #expect(await mailroom.post(Ping(id: 1)) == Receipt(delivered: 3))
        #expect(receipts.withLock { $0 } == [Receipt(deferred: 1)], "it could not be delivered mid-post")
        await mailroom.post(Ping(id: 2))
        for stream in [first, posting, last] {
            #expect(try await stream.first(3).map(\.id) == [1, 100, 2])
        }
    }

    @Test("a post from the deinit of a mail evicted during delivery is deferred, not a deadlock")
    func postFromAnEvictedMailsDeinit() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let carried = await mailroom.subscribe(to: Carried.self, bufferingPolicy: .bufferingNewest(1))
        await mailroom.post(Carried(echo: Echo(mailroom, id: 7)))
        // Evicts the first mail inside the yield, holding the post's lanes; its deinit posts.
        #expect(await mailroom.post(Carried(echo: Echo(mailroom, id: 8))) == Receipt(dropped: 1))
        #expect(try await pings.first(1).map(\.id) == [7])
        withExtendedLifetime(carried) {}
    }

    @Test("a post from a replay's filter is delivered once the replaying subscribe returns")
    func postFromAReplayFilter() async throws {
        let mailroom = Mailroom()
        await mailroom.retainLatest(Pong.self)
        await mailroom.post(Pong(id: 1))
        let pings = await mailroom.subscribe(to: Ping.self)
        let pongs = await mailroom.subscribe(to: Pong.self, startingWithLatest: true) { _ in
            mailroom.postSynchronously(Ping(id: 5))
            return true
        }
        #expect(try await pings.first(1).map(\.id) == [5])
        #expect(try await pongs.first(1) == [Pong(id: 1)])
    }

    @Test("posters on many threads, synchronous and not, share one order", .tags(.stress))
    func sharedOrderAcrossThreads() async throws {
        let mailroom = Mailroom()
        let first = await mailroom.subscribe(to: Numbered.self)
        let second = await mailroom.subscribe(to: Numbered.self)
        let perPoster = scaled(2_000)
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<4 {
                group.addTask {
                    for sequence in 0..<perPoster {
                        let mail = Numbered(poster: poster, sequence: sequence)
                        if poster.isMultiple(of: 2) {
                            mailroom.postSynchronously(mail)
                        } else {
                            await mailroom.post(mail)
                        }
                        await cooperate(after: sequence)
                    }
                }
            }
        }
        let total = 4 * perPoster
        let seenFirst = try await first.first(total)
        let seenSecond = try await second.first(total)
        #expect(seenFirst == seenSecond, "one order for everyone")
        for poster in 0..<4 {
            #expect(seenFirst.filter { $0.poster == poster }.map(\.sequence) == Array(0..<perPoster))
        }
    }
}
