import AsyncMail
import Synchronization
import Testing

extension Mailroom {
    /// Runs `action`, then returns the `count` mails of type `M` it posted, waiting for them up to
    /// `limit`.
    ///
    /// The subscription is made before `action` runs (it is live on return), so nothing `action`
    /// posts can be missed, and it ends when this returns. Mail that `action` posted directly has
    /// arrived by the time it returns; mail from tasks it started is awaited, and a passing test
    /// never waits for the limit.
    ///
    /// Records exactly one `Issue`, at `sourceLocation`, when fewer than `count` arrive within
    /// `limit`, or when more than `count` were posted by then; the issue says what was expected
    /// and what arrived (how many, and the mails themselves). Either way it returns every mail
    /// that arrived, for the test's own `#expect`s. A `count` below 1 is an issue at once, without
    /// running `action`: to expect nothing, use ``expectNoMail(of:from:waiting:sourceLocation:during:)``.
    ///
    /// ```swift
    /// let shipped = await mailroom.expectMail(of: OrderShipped.self) {
    ///     await ship(42, via: mailroom)
    /// }
    /// #expect(shipped.map(\.orderID) == [42])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ count: Int = 1,
        of type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(10),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        guard count >= 1 else {
            // Expecting nothing would pass whatever happened; that is `expectNoMail`'s job.
            Issue.record(
                "expectMail needs a count of at least 1, not \(count): use expectNoMail",
                sourceLocation: sourceLocation
            )
            return []
        }
        let posted = PostCounter()
        let stream = await subscribe(to: M.self, from: senders, where: { _ in posted.count() })
        try await action()
        let arrived = Arrivals<M>()
        let complete = await Self.read(stream, into: arrived, until: { $0 >= count }, within: limit)
        if !complete {
            Issue.record(
                "expected \(count) \(M.self) from \(senders) within \(limit); \(arrived.describe())",
                sourceLocation: sourceLocation
            )
            return arrived.mails
        }
        let more = posted.value - count
        if more > 0 {
            _ = await Self.read(stream, into: arrived, until: { $0 >= count + more }, within: limit)
            Issue.record(
                "expected exactly \(count) \(M.self) from \(senders); \(arrived.describe())",
                sourceLocation: sourceLocation
            )
        }
        return arrived.mails
    }

    /// Runs `action`, then returns the first mail of type `M` that satisfies `predicate`, waiting
    /// for it up to `limit`; mail that does not satisfy it is passed over.
    ///
    /// Records exactly one `Issue`, at `sourceLocation`, when no such mail arrives within
    /// `limit`, saying how many mails of the type arrived and what they were; it then returns
    /// `nil`. The subscription is live before `action` runs and ends when this returns.
    ///
    /// ```swift
    /// let large = await mailroom.expectMail(of: OrderPlaced.self) {
    ///     await placeOrders(via: mailroom)
    /// } where: { $0.total > 10_000 }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        of type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(10),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> M? {
        let stream = await subscribe(to: M.self, from: senders)
        try await action()
        let arrived = Arrivals<M>()
        let found = await Self.read(
            stream,
            into: arrived,
            until: { _ in arrived.mails.last.map(predicate) ?? false },
            within: limit
        )
        guard found, let match = arrived.mails.last else {
            let message =
                "expected a \(M.self) from \(senders) that matches the predicate within \(limit); "
                + "none of them did: \(arrived.describe())"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
            return nil
        }
        return match
    }

    /// Runs `action`, and records an `Issue` at `sourceLocation` if any mail of type `M` from
    /// `senders` was posted meanwhile, or within `window` after it.
    ///
    /// Mail that `action` posts directly has been delivered by the time it returns, so the
    /// default window, zero, checks it without waiting. Give a window only when `action` starts
    /// work that may post later; this is the one helper that waits for its deadline when it passes.
    ///
    /// ```swift
    /// await mailroom.expectNoMail(of: OrderShipped.self) {
    ///     await cancelOrder(42, via: mailroom)
    /// }
    /// ```
    public nonisolated(nonsending) func expectNoMail<M: Mail>(
        of type: M.Type,
        from senders: Senders = .everyone,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        let posted = PostCounter()
        let stream = await subscribe(to: M.self, from: senders, where: { _ in posted.count() })
        try await action()
        let arrived = Arrivals<M>()
        if posted.value > 0 {
            _ = await Self.read(stream, into: arrived, until: { $0 >= posted.value }, within: .seconds(10))
        } else if window > .zero {
            _ = await Self.read(stream, into: arrived, until: { $0 >= 1 }, within: window)
        }
        guard arrived.mails.isEmpty else {
            Issue.record("expected no \(M.self) from \(senders); \(arrived.describe())", sourceLocation: sourceLocation)
            return
        }
    }

    /// Reads `stream` into `arrived` until `done` says so (given the count so far) or `limit`
    /// passes; whether `done` was reached.
    private static func read<M: Mail>(
        _ stream: AsyncStream<M>,
        into arrived: Arrivals<M>,
        until done: @escaping @Sendable (Int) -> Bool,
        within limit: Duration
    ) async -> Bool {
        let reached = try? await race(limit) {
            for await mail in stream {
                if done(arrived.append(mail)) { return true }
            }
            return false
        }
        return reached ?? false
    }
}

/// Counts the posts a subscription's filter accepted, on the posting thread.
private final class PostCounter: Sendable {
    private let posted = Atomic(0)

    /// Counts one post; always accepts it.
    func count() -> Bool {
        posted.add(1, ordering: .sequentiallyConsistent)
        return true
    }

    var value: Int { posted.load(ordering: .sequentiallyConsistent) }
}

/// The mails that arrived, shared between the reading task and the test.
private final class Arrivals<M: Mail>: Sendable {
    private let received = Mutex<[M]>([])
    /// `Mutex` is invisible to ThreadSanitizer on Linux; this tells it about `received`'s lock.
    private let threadSanitizer = ThreadSanitizer.current

    /// Adds one mail; returns how many have arrived.
    func append(_ mail: M) -> Int {
        received.withLock(annotating: threadSanitizer, as: self) { received in
            received.append(mail)
            return received.count
        }
    }

    var mails: [M] { received.withLock(annotating: threadSanitizer, as: self) { $0 } }

    /// "2 arrived: [A, B]", at most 10 of them, each cut to 200 characters.
    func describe() -> String {
        let mails = self.mails
        let shown = mails.prefix(10).map { mail in
            let text = String(describing: mail)
            return text.count > 200 ? String(text.prefix(200)) + "…" : text
        }
        let rest = mails.count > 10 ? ", and \(mails.count - 10) more" : ""
        return "\(mails.count) arrived" + (mails.isEmpty ? "" : ": [" + shown.joined(separator: ", ") + rest + "]")
    }
}
