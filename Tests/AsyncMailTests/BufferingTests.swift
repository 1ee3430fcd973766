import AsyncMail
import Testing

@Suite("Buffering is explicit")
struct BufferingTests {
    @Test("the default is unbounded: nothing is dropped while the consumer is away")
    func unboundedByDefault() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        for id in 0..<5_000 {
            #expect(await mailroom.post(Ping(id: id)) == Receipt(delivered: 1))
        }
        let received = try await pings.first(5_000)
        #expect(received.map(\.id) == Array(0..<5_000))
    }

    @Test("bufferingOldest keeps the first mail and reports the new mail as dropped")
    func bufferingOldest() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(2))
        var receipts: [Receipt] = []
        for id in 1...4 { receipts.append(await mailroom.post(Ping(id: id))) }
        #expect(receipts == [Receipt(delivered: 1), Receipt(delivered: 1), Receipt(dropped: 1), Receipt(dropped: 1)])
        #expect(try await pings.first(2) == [Ping(id: 1), Ping(id: 2)])
    }

    @Test("bufferingNewest keeps the latest mail and reports each eviction as a drop")
    func bufferingNewest() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingNewest(2))
        var receipts: [Receipt] = []
        for id in 1...4 { receipts.append(await mailroom.post(Ping(id: id))) }
        #expect(receipts == [Receipt(delivered: 1), Receipt(delivered: 1), Receipt(dropped: 1), Receipt(dropped: 1)])
        #expect(try await pings.first(2) == [Ping(id: 3), Ping(id: 4)])
    }

    @Test("a slow subscriber never blocks the poster or delays the others")
    func slowSubscriberDoesNotBlock() async throws {
        let mailroom = Mailroom()
        let stalled = await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(1))
        let fast = await mailroom.subscribe(to: Ping.self)
        let count = 10_000
        let consumer = Task { await fast.untimedFirst(count) }
        // If a post could wait on the stalled subscriber this would hang and time out.
        let dropped = try await withTimeout {
            var dropped = 0
            for id in 0..<count { dropped += await mailroom.post(Ping(id: id)).dropped }
            return dropped
        }
        #expect(dropped == count - 1)
        let received = try await withTimeout { await consumer.value }
        #expect(received.map(\.id) == Array(0..<count))
        withExtendedLifetime(stalled) {}
    }

    @Test("receipts account for every matching subscription on every post")
    func receiptsAddUp() async throws {
        let mailroom = Mailroom()
        let streams = [
            await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingOldest(3)),
            await mailroom.subscribe(to: Ping.self, bufferingPolicy: .bufferingNewest(5)),
            await mailroom.subscribe(to: Ping.self),
        ]
        var total = Receipt()
        for id in 0..<20 {
            let receipt = await mailroom.post(Ping(id: id))
            #expect(receipt.matched == streams.count)
            total += receipt
        }
        #expect(total == Receipt(delivered: 3 + 5 + 20, dropped: 17 + 15))
    }

    static let zeroOrNegative: [AsyncStream<Ping>.Continuation.BufferingPolicy] = [
        .bufferingOldest(0), .bufferingNewest(0), .bufferingOldest(-5), .bufferingNewest(-1),
    ]

    @Test(
        "a limit of zero or less holds nothing: with nobody waiting, every post reports a drop",
        arguments: zeroOrNegative
    )
    func zeroOrNegativeLimitDropsAndReports(policy: AsyncStream<Ping>.Continuation.BufferingPolicy) async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self, bufferingPolicy: policy)
        for id in 0..<3 {
            #expect(await mailroom.post(Ping(id: id)) == Receipt(delivered: 0, dropped: 1))
        }
        await mailroom.close()
        #expect(try await pings.collect() == [], "nothing was buffered")
    }

    @Test("a limit of zero or less still hands mail to a consumer that is already waiting", arguments: zeroOrNegative)
    func zeroOrNegativeLimitHandsOver(policy: AsyncStream<Ping>.Continuation.BufferingPolicy) async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self, bufferingPolicy: policy)
        let consumer = Task { await pings.untimedFirst(1) }
        // Whether the consumer is waiting yet is not observable, so post until a receipt says it took one;
        // every earlier post must have been reported as a drop.
        let handedOver = try await withTimeout {
            var id = 0
            while true {
                let receipt = await mailroom.post(Ping(id: id))
                if receipt == Receipt(delivered: 1) { return id }
                #expect(receipt == Receipt(dropped: 1))
                id += 1
                await Task.yield()
            }
        }
        #expect(try await withTimeout { await consumer.value } == [Ping(id: handedOver)])
    }
}
