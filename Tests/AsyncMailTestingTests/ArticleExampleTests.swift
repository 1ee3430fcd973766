import AsyncMail
import AsyncMailTesting
import TestSupport
import Testing

// The examples of the "Testing with AsyncMail" article, run as written.

struct OrderPlaced: Mail {
    let id: Int
    let total: Int
}

struct OrderShipped: Mail {
    let orderID: Int
}

func ship(_ orderID: Int, via mailroom: Mailroom) async {
    await mailroom.post(OrderShipped(orderID: orderID))
}

func cancelOrder(_ orderID: Int, via mailroom: Mailroom) async {
    _ = orderID  // a cancelled order is never shipped
}

func placeOrders(via mailroom: Mailroom) async {
    for (id, total) in [(1, 20), (2, 25_000), (3, 60)] { await mailroom.post(OrderPlaced(id: id, total: total)) }
}

/// Code under test that records orders in the background: nothing announces each record.
final class Ledger: Sendable {
    private let orders = Locked<[Int]>([])

    var count: Int { orders.withLock { $0.count } }

    func record(from mailroom: Mailroom) async -> Task<Void, Never> {
        let placed = await mailroom.subscribe(to: OrderPlaced.self)
        return Task { for await order in placed { self.orders.withLock { $0.append(order.id) } } }
    }
}

/// Code under test that posts to the shared mailroom.
struct Checkout {
    func place(_ id: Int) async {
        await Mailroom.shared.post(OrderPlaced(id: id, total: 100))
    }
}

@Suite("Testing with AsyncMail: the article's examples")
struct ArticleExampleTests {
    @Test func shippingAnnouncesTheOrder() async {
        let mailroom = Mailroom()
        let shipped = await mailroom.expectMail(OrderShipped.self) {
            await ship(42, via: mailroom)
        }
        #expect(shipped.map(\.orderID) == [42])
    }

    @Test func largeOrdersAreFound() async {
        let mailroom = Mailroom()
        let large = await mailroom.expectMail(OrderPlaced.self) {
            await placeOrders(via: mailroom)
        } where: {
            $0.total > 10_000
        }
        #expect(large?.id == 2)
    }

    @Test func cancelledOrdersAreNotShipped() async {
        let mailroom = Mailroom()
        await mailroom.expectNoMail(OrderShipped.self) {
            await cancelOrder(42, via: mailroom)
        }
    }

    @Test func theScreenShowsEveryPing() async {
        let mailroom = Mailroom()
        let screen = Screen()
        let observation = await mailroom.observe(Ping.self, owner: screen) { screen, ping in
            await screen.show(ping.id)
        }
        await mailroom.post(Ping(id: 1))
        await observation.expectHandled()
        #expect(await screen.shown == [1])
        observation.cancel()
    }

    @Test func theLedgerRecordsEveryOrder() async throws {
        let mailroom = Mailroom()
        let ledger = Ledger()
        let recording = await ledger.record(from: mailroom)
        await placeOrders(via: mailroom)
        try await waitUntil("the ledger has all three orders") { ledger.count == 3 }
        recording.cancel()
    }

    @Test func aStreamDeliversInTime() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        await mailroom.post(Ping(id: 1))
        #expect(try await pings.first(1) == [Ping(id: 1)])
    }

    @Test func anyEventWithinALimit() async throws {
        let mailroom = Mailroom()
        let pings = await mailroom.subscribe(to: Ping.self)
        let handled = Task { await mailroom.post(Ping(id: 1)) }
        let receipt = try await withTimeout { await handled.value }
        #expect(receipt == Receipt(delivered: 1))
        #expect(try await pings.first(1, within: .seconds(20)) == [Ping(id: 1)])
    }
}

@Suite(.isolatedSharedMailroom)
struct CheckoutTests {
    @Test func announcesTheOrder() async {
        let placed = await Mailroom.shared.expectMail(OrderPlaced.self) {
            await Checkout().place(42)  // posts to Mailroom.shared
        }
        #expect(placed.map(\.id) == [42])
    }
}
