// Bounded buffers and receipts: a slow consumer loses mail, and every post says how much.
import AsyncMail

struct Price: Mail {
    let cents: Int
}

let mailroom = Mailroom()
// A dashboard only cares about the latest prices; an auditor must see every one.
let dashboard = await mailroom.subscribe(to: Price.self, bufferingPolicy: .bufferingNewest(2))
let auditor = await mailroom.subscribe(to: Price.self)

var total = Receipt()
for cents in [100, 101, 102, 103, 104] {
    let receipt = await mailroom.post(Price(cents: cents))
    print("posted \(cents): \(receipt)")
    total += receipt
}
print("in total: \(total)")

var shown: [Int] = []
for await price in dashboard {
    shown.append(price.cents)
    if shown.count == 2 { break }
}
var audited: [Int] = []
for await price in auditor {
    audited.append(price.cents)
    if audited.count == 5 { break }
}
print("dashboard shows the newest:", shown)
print("auditor saw everything:", audited)
// snippet.hide
precondition(total == Receipt(delivered: 5 + 2, dropped: 3))
precondition(shown == [103, 104])
precondition(audited == [100, 101, 102, 103, 104])
// snippet.show
