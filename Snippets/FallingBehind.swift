// A subscriber that falls behind, three ways: ended (and it comes back by position), dropping and
// told what it lost, in its own loop, or buffered without bound.
import AsyncMail

struct Tick: Mail {
    let number: Int
}

let mailroom = Mailroom()

// Ended past its backlog: nothing it gets has a hole; it resumes by position.
let ended = await mailroom.subscribe(to: Tick.self, backlog: .ending(past: 2))
// Dropping past its backlog: it keeps its subscription, and each loss is told in order.
let dropping = await mailroom.subscribe(to: Tick.self, backlog: .droppingOldest(past: 2))
// Unbounded: never drops, never ends; for consumers that keep up by construction.
let unbounded = await mailroom.subscribe(to: Tick.self)

var total = Receipt()
for number in 1...5 { total += await mailroom.post(Tick(number: number)) }
print("receipts:", total)

var heard: [String] = []
for await delivery in dropping {
    switch delivery {
    case .mail(let tick): heard.append("\(tick.number)")
    case .lost(let loss): heard.append("lost \(loss.count)")
    }
    if heard.count == 3 { break }
}
print("dropping:", heard)

var endedWith: BacklogLimitExceeded?
do {
    for try await _ in ended {}
} catch {
    endedWith = error
}
print("ended:", endedWith.map { "more than \($0.limit) behind" } ?? "no")
// snippet.hide
precondition(total == Receipt(delivered: 2 + 2 + 5, dropped: 3, ended: 1))
precondition(heard == ["lost 3", "4", "5"])
precondition(endedWith == BacklogLimitExceeded(limit: 2))
var all: [Int] = []
for await tick in unbounded {
    all.append(tick.number)
    if all.count == 5 { break }
}
precondition(all == [1, 2, 3, 4, 5])
// snippet.show
