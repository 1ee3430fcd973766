import AsyncMail
import Shapes

// The ratio targets, measured with the shapes of each ratio taking turns inside every round.
//
// This VM's speed drifts in phases longer than one benchmark: two back-to-back runs of
// package-benchmark gave `PostCost/alone` medians of 6.8 and 5.0 ms, and one sample's p0 and
// p50 differ by up to 1.8x. package-benchmark measures one benchmark after another, so the two
// sides of a ratio can land in different phases. Here both sides take turns, so a slow phase
// lands on each alike.
//
// Where a process's threads and memory land matters too: the same binary gave a value-pinned
// post beside 10,000 others 1.00x its cost alone in most processes and 1.37x in one. So `run.sh`
// runs this in several processes, and `ratios.py` takes each process's ratio of medians and
// judges their median.

/// A shape to time, under the name every report gives it.
struct NamedShape {
    let name: String
    let run: () async -> Duration

    init(_ name: String, _ shape: @escaping (Measure) async -> Void) {
        self.name = name
        self.run = { await timed(shape) }
    }
}

/// Runs each shape once per round, in turn, and returns every sample as
/// "sample<TAB>name<TAB>nanoseconds", the lines `ratios.py` reads.
func interleave(rounds: Int, _ shapes: [NamedShape]) async -> [String] {
    var samples: [String] = []
    guard !shapes.isEmpty else { return samples }
    for _ in 0..<rounds {
        for shape in shapes {
            let elapsed = await shape.run()
            samples.append("sample\t\(shape.name)\t\(nanoseconds(elapsed))")
        }
    }
    return samples
}

/// Whole nanoseconds in `duration`.
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

/// Samples of every shape that a ratio target divides (or those whose name contains
/// `only`), interleaved.
func ratioSamples(rounds: Int, only: String?) async -> [String] {
    let selected = { (shapes: [NamedShape]) in shapes.filter { only == nil || $0.name.contains(only!) } }
    var samples = await interleave(
        rounds: rounds,
        selected([
            NamedShape("Steady/AsyncStream") { measure in
                let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
                await steady(consuming: stream, measure: measure) { continuation.yield(Beat(value: $0)) }
            },
            NamedShape("Steady/Mailroom") { measure in
                let mailroom = Mailroom()
                let stream = await mailroom.subscribe(to: Beat.self)
                await steady(consuming: stream, measure: measure) { await mailroom.post(Beat(value: $0)) }
            },
            NamedShape("Paced/AsyncStream") { measure in
                let (stream, continuation) = AsyncStream.makeStream(of: Beat.self)
                await paced(consuming: stream, measure: measure) { continuation.yield(Beat(value: $0)) }
            },
            NamedShape("Paced/Mailroom") { measure in
                let mailroom = Mailroom()
                let stream = await mailroom.subscribe(to: Beat.self)
                await paced(consuming: stream, measure: measure) { await mailroom.post(Beat(value: $0)) }
            },
            NamedShape("Paced/messages(of:for:)") { measure in await pacedMessages(measure: measure) },
        ])
    )

    // Each fan-out sample takes about 0.1 s, so fewer rounds.
    samples += await interleave(
        rounds: max(5, rounds / 4),
        selected([
            NamedShape("FanOut/Mailroom x10") { measure in await fanOut(to: 10, measure: measure) },
            NamedShape("FanOut/Mailroom x1000") { measure in await fanOut(to: 1_000, measure: measure) },
        ])
    )

    // Each post cost beside a crowd, against the same post alone (in a fresh mailroom each time).
    var postShapes: [NamedShape] = []
    var crowds: [any Sendable] = []
    for crowd in Crowd.allCases {
        let pin = Pin(beside: crowd)
        let crowded = Mailroom()
        // A ratio needs both sides: a crowd's pair is selected when either name matches, and the
        // crowd (slow to gather) only then.
        let pair = [
            NamedShape(crowd.aloneShape) { await postCost(on: Mailroom(), pinned: pin, measure: $0) },
            NamedShape(crowd.besideShape) { await postCost(on: crowded, pinned: pin, measure: $0) },
        ]
        guard !selected(pair).isEmpty else { continue }
        crowds.append(await crowd.gather(on: crowded))
        postShapes += pair
    }
    samples += await interleave(rounds: rounds, postShapes)
    withExtendedLifetime(crowds) {}
    return samples
}
