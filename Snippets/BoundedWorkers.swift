// Bounded workers in a task group that end together: the first to fall behind ends them all.
import AsyncMail

struct Order: Mail {
    let id: Int
}

let mailroom = Mailroom()
let (gate, open) = AsyncStream.makeStream(of: Void.self)

// One worker per station, each with a backlog limit. The grill is slow: it waits at the gate.
let grill = await mailroom.subscribe(to: Order.self, backlog: .ending(past: 2))
let salad = await mailroom.subscribe(to: Order.self, backlog: .ending(past: 64))

let kitchen = Task {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            for await _ in gate { break }  // slow: starts only once the gate opens
            for try await _ in grill {}
        }
        group.addTask {
            for try await _ in salad {}
        }
        // The first worker to end ends them all: `next()` rethrows its error, and leaving the
        // group cancels the others. `waitForAll()` would wait for every worker first, and a
        // worker on a live stream never ends.
        while try await group.next() != nil {}
    }
}

var total = Receipt()
for id in 1...5 { total += await mailroom.post(Order(id: id)) }
print("over 5 orders:", total)  // the grill fell 2 behind, so its subscription ended
open.yield()

do {
    try await kitchen.value
    // snippet.hide
    preconditionFailure("the kitchen ended without the grill's error")
    // snippet.show
} catch let error as BacklogLimitExceeded {
    print("the kitchen stopped:", error)
}
// snippet.hide
precondition(total.ended == 1, "the grill's subscription ended: \(total)")
let left = await mailroom.subscriberCount(Order.self)
precondition(left == 0, "every worker ended: \(left) left")
// snippet.show
