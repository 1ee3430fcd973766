/// A random number generator that gives the same numbers for the same seed, on every run and
/// every machine (SplitMix64), for randomized tests whose failures must replay.
///
/// The system generator cannot be seeded, so a schedule or a payload it chose cannot be made
/// again. Put the seed in the test's arguments or its failure message, and a failure replays
/// exactly:
///
/// ```swift
/// @Test(arguments: 1...8 as ClosedRange<UInt64>)
/// func randomSchedules(seed: UInt64) async {
///     var random = SeededRandomNumberGenerator(seed: seed)
///     let delay = Int.random(in: 0..<10, using: &random)
///     #expect((0..<10).contains(delay), "seed \(seed)")
/// }
/// ```
///
/// Not for anything that must be unpredictable: the sequence is fully determined by the seed.
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose numbers are determined by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next number of the sequence.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
