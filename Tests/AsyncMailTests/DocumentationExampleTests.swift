import AsyncMail
import Testing

// Testing patterns that need nothing but AsyncMail and Swift Testing, run as written.

struct OrderShipped: Mail {
    let orderID: Int
}

struct OrderCooked: Mail {
    let orderID: Int
}

func ship(_ orderID: Int, via mailroom: Mailroom) async {
    await mailroom.post(OrderShipped(orderID: orderID))
}

func cook(_ orders: [Int], via mailroom: Mailroom) async {
    for order in orders { await mailroom.post(OrderCooked(orderID: order)) }
}

@Suite("Documentation examples")
struct DocumentationExampleTests {
    // Subscribe before you act.
    @Test func shippingAnnouncesTheOrder() async throws {
        let mailroom = Mailroom()
        let shipped = await mailroom.subscribe(to: OrderShipped.self)  // 1. subscribe

        await ship(42, via: mailroom)  // 2. act

        var iterator = shipped.makeAsyncIterator()  // 3. await the event
        #expect(await iterator.next()?.orderID == 42)
    }

    // Count with a confirmation.
    @Test func everyOrderIsCooked() async {
        let mailroom = Mailroom()
        let cooked = await mailroom.subscribe(to: OrderCooked.self)
        await cook([1, 2, 3], via: mailroom)
        await mailroom.close()  // finish the stream, so the loop below ends

        await confirmation(expectedCount: 3) { cookedOne in
            for await _ in cooked { cookedOne() }
        }
    }

    @Test("checking that nothing arrived, by receipt")
    func nothingArrived() async {
        let mailroom = Mailroom()
        let alice = Player("alice")
        let bob = Player("bob")
        let fromAlice = await mailroom.subscribe(to: Ping.self, from: .only(alice))
        #expect(await mailroom.post(Ping(id: 1), from: bob) == Receipt())  // reached nobody
        withExtendedLifetime(fromAlice) {}
    }
}
