import Synchronization

/// A resuming subscription's replay kept apart from its live buffer: the stream it hands out
/// yields the replay first, from an array, then the live stream's mail.
///
/// Made only for a `.bufferingNewest(n)` subscription that replays something: there, one buffer
/// for both would let live mail evict kept mail the consumer has not read, which the promise
/// "the replay does not count against the limit" rules out. Apart, the live stream keeps its
/// newest `n` exactly, and the replay is never dropped.
///
/// Why `@unchecked Sendable` is safe: the replay's index and the live iterator are touched only
/// by ``next()``, and `isReading` makes a second, concurrent `next()` trap (as `AsyncStream`
/// does for a second consumer) instead of racing; so they are never accessed from two tasks at
/// once. `RoomHistoryTests` drains one (and the model tests many) under ThreadSanitizer in CI.
final class ReplayPrefix<Element: Sendable>: @unchecked Sendable {
    private let replay: [Element]
    private var index = 0
    private var live: AsyncStream<Element>.Iterator
    private let isReading = Atomic<Bool>(false)

    init(replay: [Element], live: AsyncStream<Element>) {
        self.replay = replay
        self.live = live.makeAsyncIterator()
    }

    /// The stream a subscriber gets: the replay, then live mail. Dropping it drops the live
    /// stream, which ends the subscription as dropping any stream does.
    static func stream(replay: [Element], live: AsyncStream<Element>) -> AsyncStream<Element> {
        let prefix = ReplayPrefix(replay: replay, live: live)
        return AsyncStream(unfolding: { await prefix.next() })
    }

    private func next() async -> Element? {
        let (exchanged, _) = isReading.compareExchange(expected: false, desired: true, ordering: .acquiring)
        precondition(exchanged, "a subscription's stream was read from two tasks at once; iterate it from one")
        defer { isReading.store(false, ordering: .releasing) }
        if index < replay.count {
            defer { index += 1 }
            return replay[index]
        }
        return await live.next(isolation: nil)
    }
}
