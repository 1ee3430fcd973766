// The pattern AsyncMail tests follow: a mailroom per test, subscribe before acting,
// and wait on the real event with a deadline that fails loudly (never a sleep).
import AsyncMail

struct OrderShipped: Mail {
    let orderID: Int
}

/// The code under test: ships an order and announces it.
func ship(_ orderID: Int, via mailroom: Mailroom) async {
    await mailroom.post(OrderShipped(orderID: orderID))
}

/// Waits for the first element, or gives up after `seconds` and says so.
func firstElement<Element: Sendable>(
    of stream: AsyncStream<Element>,
    within seconds: Int
) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask { await stream.first { _ in true } }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        return await group.next() ?? nil
    }
}

let mailroom = Mailroom()  // one per test: no state shared between tests
let shipped = await mailroom.subscribe(to: OrderShipped.self)  // 1. subscribe first
await ship(42, via: mailroom)  // 2. act
guard let announcement = await firstElement(of: shipped, within: 5) else {  // 3. await the event
    fatalError("no OrderShipped within 5 seconds")
}
print("shipped order", announcement.orderID)
// snippet.hide
precondition(announcement.orderID == 42)
// snippet.show
