// Subscribe, post, cancel: the whole life of a subscription in one script.
import AsyncMail

struct OrderPlaced: Mail {
    let orderID: Int
}

struct OrderCooked: Mail {
    let orderID: Int
}

let mailroom = Mailroom()

// Subscriptions are live as soon as `subscribe` returns: nothing posted from here on is missed.
let placed = await mailroom.subscribe(to: OrderPlaced.self)
let cooked = await mailroom.subscribe(to: OrderCooked.self)

// The kitchen cooks every order it hears about, and says so through the same mailroom.
let kitchen = Task {
    for await order in placed {
        await mailroom.post(OrderCooked(orderID: order.orderID))
    }
}

for id in 1...3 {
    let receipt = await mailroom.post(OrderPlaced(orderID: id))
    print("placed order \(id): \(receipt)")
}

var served: [Int] = []
for await order in cooked {
    print("cooked order \(order.orderID)")
    served.append(order.orderID)
    if served.count == 3 { break }
}
// snippet.hide
precondition(served == [1, 2, 3], "every order is cooked, in the order it was placed")
// snippet.show

// Cancelling the consuming task ends its subscription: no token to keep, nothing to unregister.
kitchen.cancel()
await kitchen.value
let listening = await mailroom.subscriberCount(OrderPlaced.self)
print("kitchen subscriptions left: \(listening)")
// snippet.hide
precondition(listening == 0, "cancelling the kitchen removes its subscription")
// snippet.show
