import AsyncMail
import Synchronization
import Testing

extension Mailroom {
    /// Runs `action` with a subscription that drops past `backlog` and tells what it lost, then
    /// returns what it was handed, mails and losses in order, once `count` mails of type `M` are
    /// accounted for (each mail received, and each one told lost), waiting up to `limit`.
    ///
    /// The subscription is made before `action` runs and is not read until it returns, so mail
    /// `action` posts directly fills the backlog as a consumer that fell behind would: with
    /// `.droppingOldest(past: 2)`, five posts come back as a loss of three, then the newest two.
    ///
    /// Records exactly one `Issue`, at `sourceLocation`, when fewer than `count` mails are
    /// accounted for within `limit`, or when more than `count` were posted by then; the issue
    /// lists what arrived. Either way it returns what arrived, for the test's own `#expect`s. A
    /// `count` below 1 is an issue at once, without running `action`.
    ///
    /// ```swift
    /// let heard = await mailroom.expectMail(Tick.self, count: 5, backlog: .droppingOldest(past: 2)) {
    ///     for number in 1...5 { await mailroom.post(Tick(number: number)) }
    /// }
    /// #expect(heard.compactMap(\.loss) == [MailLoss(code: .dropped, count: 3)])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ type: M.Type,
        count: Int = 1,
        from senders: Senders = .everyone,
        backlog: Backlog<M, DroppingStream<M>>,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [Delivery<M>] {
        guard Self.isExpectable(count, at: sourceLocation) else { return [] }
        let record = LossyArrivals<M>()
        let inbox = await subscribe(to: M.self, from: senders, backlog: backlog, where: record.count)
        try await action()
        let accounted = try? await race(limit, at: sourceLocation) { () -> Int in
            var accounted = 0
            for await delivery in inbox {
                record.heard.withLock { $0.append(delivery) }
                accounted += delivery.loss?.count ?? 1
                if accounted >= count { break }
            }
            return accounted
        }
        let arrived = record.heard.withLock { $0 }
        let postedNow = record.posted.load(ordering: .relaxed)
        let described = arrived.map { $0.loss.map { "lost \($0.count) (\($0.code))" } ?? "\($0.mail!)" }
        if (accounted ?? 0) < count {
            let message =
                "expected \(count) \(M.self) from \(senders), received or told lost, within \(limit); "
                + "\(arrived.count) arrived: \(described)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        } else if postedNow > count || (accounted ?? 0) > count {
            let message =
                "expected \(count) \(M.self) from \(senders), received or told lost; \(postedNow) were posted: "
                + "\(described)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        }
        return arrived
    }
}

/// What ``Mailroom/expectMail(_:count:from:backlog:within:sourceLocation:during:)`` saw: the
/// mails posted to its subscription, counted by its filter as each post delivers them, and what
/// its loop was handed.
private final class LossyArrivals<M: Mail>: Sendable {
    let posted = Atomic<Int>(0)
    let heard = Mutex<[Delivery<M>]>([])

    /// The subscription's filter: counts each matching mail, and takes it.
    @Sendable func count(_ mail: M) -> Bool {
        posted.add(1, ordering: .relaxed)
        return true
    }
}
