// A ticker that runs only while someone listens: started by the first subscriber, cancelled
// after the last one leaves, started again for the next. The demand behind it is a sequence.
import AsyncMail

struct Tick: Mail {
    let number: Int
}

struct Quote: Mail {
    let price: Int
}

let mailroom = Mailroom()

// Each run of the ticker says when it starts and when it stops.
let (runs, run) = AsyncStream.makeStream(of: String.self)
let ticker = Task {
    await mailroom.whileSubscribed(to: Tick.self) {
        run.yield("started")
        defer { run.yield("stopped") }
        var number = 0
        while !Task.isCancelled {
            number += 1
            await mailroom.post(Tick(number: number))
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// The next element of a stream (nil once it has ended).
func next<Element>(_ stream: AsyncStream<Element>) async -> Element? {
    for await element in stream { return element }
    return nil
}

// Nobody listens: nothing runs. A listener, as a connection's task would be, is the first
// subscriber: it starts the ticker. When the task ends, its subscription goes: the last one.
let listener = Task {
    let ticks = await mailroom.subscribe(to: Tick.self)
    var heard = 0
    for await _ in ticks {
        heard += 1
        if heard == 3 { break }
    }
    return heard
}
let firstRun = await next(runs)
precondition(firstRun == "started")
let heard = await listener.value
let afterLast = await next(runs)
precondition(afterLast == "stopped", "the ticker stops after the last subscriber")

// The count, as a sequence: the current value at once, then every change.
let counts = await mailroom.subscriberCounts(Tick.self)
let nobody = await next(counts)
precondition(nobody == 0)
let again = await mailroom.subscribe(to: Tick.self)
let one = await next(counts)
precondition(one == 1)
let secondRun = await next(runs)
precondition(secondRun == "started", "the next first subscriber starts it again")
for await tick in again {
    print("tick \(tick.number)")
    break
}

// A feed for one symbol, kept running through quick reconnects: after its last listener leaves,
// `stopAfter` gives it a grace before it is cancelled, and a listener back within it finds it running.
let (feedRuns, feedRun) = AsyncStream.makeStream(of: String.self)
let acmeFeed = Task {
    await mailroom.whileSubscribed(to: Quote.self, from: .only("ACME"), stopAfter: .seconds(30)) {
        feedRun.yield("started")
        while !Task.isCancelled {
            await mailroom.post(Quote(price: 100), from: "ACME")
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
// A board that hears every symbol is demand for ACME's feed: a post from "ACME" would reach it.
var board: AsyncStream<Quote>? = await mailroom.subscribe(to: Quote.self)
let feedStarted = await next(feedRuns)
precondition(feedStarted == "started")
board = nil  // the board reconnects...
board = await mailroom.subscribe(to: Quote.self)  // ...within the grace: the feed is not started again
let quote = await next(board!)
precondition(quote?.price == 100)

// Closing the mailroom ends the subscriptions, the counts, the ticker and the feed.
await mailroom.close()
await acmeFeed.value
feedRun.finish()
var feedRestarts: [String] = []
for await run in feedRuns { feedRestarts.append(run) }
precondition(feedRestarts.isEmpty, "one start for the board and its reconnect")
let atClose = await next(runs)
precondition(atClose == "stopped")
await ticker.value
let countsAfterClose = await next(counts)
precondition(countsAfterClose == nil, "the counts end when the mailroom closes")
print("ran while someone listened, \(heard) ticks the first time")
