import AsyncMail
import Foundation
import Shapes

/// Best of many short runs per shape, alternating the shapes compared, for quick A/B
/// comparisons while changing the hot path. Steadier than any median, but not a target.
func quickComparisons() async {
    /// Nanoseconds per operation for a run of `mailPerSample`.
    func perOperation(_ elapsed: Duration) -> Double {
        Double(nanoseconds(elapsed)) / Double(mailPerSample)
    }
    /// The best time per operation of each shape, the shapes taking turns.
    func best(_ shapes: [(Measure) async -> Void], runs: Int = 40) async -> [Double] {
        var fastest = Array(repeating: Double.infinity, count: shapes.count)
        for _ in 0..<runs {
            for (index, shape) in shapes.enumerated() {
                fastest[index] = min(fastest[index], perOperation(await timed(shape)))
            }
        }
        return fastest
    }
    let unread = await best([
        { measure in
            let (stream, continuation) = AsyncStream.makeStream(of: Beat.self, bufferingPolicy: .bufferingNewest(1))
            await measure { for value in 0..<mailPerSample { continuation.yield(Beat(value: value)) } }
            withExtendedLifetime(stream) {}
        },
        { await postCost(on: Mailroom(), pinned: .unpinned, measure: $0) },
    ])
    print(String(format: "unread, ns per post:        AsyncStream %6.0f  Mailroom %6.0f", unread[0], unread[1]))
    let churnRoom = Mailroom()
    let churn = await best([
        { measure in
            await measure {
                for _ in 0..<mailPerSample {
                    let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
                    continuation.onTermination = { _ in }
                    withExtendedLifetime(stream) {}
                }
            }
        },
        { measure in await measure { for _ in 0..<mailPerSample { _ = await churnRoom.subscribe(to: Beat.self) } } },
    ])
    print(String(format: "make + drop, ns per pair:   AsyncStream %6.0f  Mailroom %6.0f", churn[0], churn[1]))
    for crowd in Crowd.allCases {
        let pin = Pin(beside: crowd)
        let crowded = Mailroom()
        let bystanders = await crowd.gather(on: crowded)
        let costs = await best([
            { await postCost(on: Mailroom(), pinned: pin, measure: $0) },
            { await postCost(on: crowded, pinned: pin, measure: $0) },
        ])
        withExtendedLifetime(bystanders) {}
        print(
            String(
                format: "beside 10k %@, ns per post: alone %6.0f  beside %6.0f",
                crowd.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0),
                costs[0],
                costs[1]
            )
        )
    }
}
