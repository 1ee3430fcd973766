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
    /// that arrived, for the test's own `#expect`s. Arrival is recorded as each post delivers, so
    /// what the issue lists is exact even when the test's own tasks run late on a busy machine. A
    /// `count` below 1 is an issue at once, without running `action`: to expect nothing, use
    /// ``expectNoMail(_:from:waiting:sourceLocation:during:)``.
    ///
    /// When `senders` names one sender and its mail falls short, the issue also lists every mail
    /// of the type posted meanwhile, with its sender: mail that came from another sender is
    /// usually the clue. A tap watches for it, which no subscriber count or receipt sees.
    ///
    /// ```swift
    /// let shipped = await mailroom.expectMail(OrderShipped.self) {
    ///     await ship(42, via: mailroom)
    /// }
    /// #expect(shipped.map(\.orderID) == [42])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ type: M.Type,
        count: Int = 1,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        guard Self.isExpectable(count, at: sourceLocation) else { return [] }
        let arrived = Arrivals<M>()
        let stream = await subscribe(to: M.self, from: senders, where: arrived.record)
        let elsewhere = await OtherSenders<M>.watch(self, besides: senders)
        try await action()
        return await Self.check(
            count,
            arrived,
            in: stream,
            from: "\(senders)",
            elsewhere,
            within: limit,
            at: sourceLocation
        )
    }

    /// Runs `action`, then returns the `count` mails of type `M` it posted from any sender of type
    /// `S`, waiting for them up to `limit`: ``expectMail(_:count:from:within:sourceLocation:during:)``
    /// for a sender-type subscription (`subscribe(to:fromAny:)`), with the same issues.
    ///
    /// ```swift
    /// let scored = await mailroom.expectMail(Score.self, fromAny: Player.self) {
    ///     await mailroom.post(Score(points: 3), from: Player(name: "ada"))
    /// }
    /// #expect(scored.map(\.points) == [3])
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        count: Int = 1,
        fromAny senderType: S.Type,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows -> [M] {
        guard Self.isExpectable(count, at: sourceLocation) else { return [] }
        let arrived = Arrivals<M>()
        let stream = await subscribe(to: M.self, fromAny: S.self, where: arrived.record)
        let elsewhere = await OtherSenders<M>.watch(self, besides: nil)
        try await action()
        return await Self.check(
            count,
            arrived,
            in: stream,
            from: "any \(S.self)",
            elsewhere,
            within: limit,
            at: sourceLocation
        )
    }

    /// Whether `count` is one to expect; records the issue at once when it is not. Expecting
    /// nothing would pass whatever happened: that is `expectNoMail`'s job.
    static func isExpectable(_ count: Int, at sourceLocation: SourceLocation) -> Bool {
        guard count < 1 else { return true }
        Issue.record(
            "expectMail needs a count of at least 1, not \(count): use expectNoMail",
            sourceLocation: sourceLocation
        )
        return false
    }

    /// Waits for `count` arrivals on `stream`, and records the issue when fewer or more came.
    private static func check<M: Mail, Element: Sendable>(
        _ count: Int,
        _ arrived: Arrivals<M>,
        in stream: AsyncStream<Element>,
        from senders: String,
        _ elsewhere: OtherSenders<M>,
        within limit: Duration,
        at sourceLocation: SourceLocation
    ) async -> [M] {
        let complete = await first(in: stream, within: limit, at: sourceLocation) { _ in arrived.count >= count }
        report(count, arrived, complete: complete != nil, from: senders, within: limit, at: sourceLocation) {
            elsewhere.describe(besides: arrived.count)
        }
        return arrived.mails
    }

    /// Records the one issue of an `expectMail` with a count: fewer than `count` arrived within
    /// `limit` (`complete` false), or more did. `qualifier` says what the mail followed (" after
    /// the position"); `elsewhere` what other senders posted meanwhile, read only on a failure.
    static func report<M: Mail>(
        _ count: Int,
        _ arrived: Arrivals<M>,
        complete: Bool,
        from senders: String,
        _ qualifier: String = "",
        within limit: Duration,
        at sourceLocation: SourceLocation,
        elsewhere: () -> String = { "" }
    ) {
        if !complete {
            let message =
                "expected \(count) \(M.self) from \(senders)\(qualifier) within \(limit); \(arrived.describe())"
                + elsewhere()
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        } else if arrived.count > count {
            Issue.record(
                Comment(
                    rawValue: "expected exactly \(count) \(M.self) from \(senders)\(qualifier); \(arrived.describe())"
                ),
                sourceLocation: sourceLocation
            )
        }
    }

    /// Runs `action`, then returns the first mail of type `M` that satisfies `predicate`, waiting
    /// for it up to `limit`; mail that does not satisfy it is passed over.
    ///
    /// Records exactly one `Issue`, at `sourceLocation`, when no such mail arrives within
    /// `limit`, saying how many mails of the type arrived and what they were, and, when `senders`
    /// names one sender, what other senders posted; it then returns `nil`. The subscription is
    /// live before `action` runs and ends when this returns.
    ///
    /// ```swift
    /// let large = await mailroom.expectMail(OrderPlaced.self) {
    ///     await placeOrders(via: mailroom)
    /// } where: { $0.total > 10_000 }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> M? {
        let arrived = Arrivals<M>()
        let stream = await subscribe(to: M.self, from: senders, where: arrived.record)
        let elsewhere = await OtherSenders<M>.watch(self, besides: senders)
        try await action()
        return await Self.match(in: stream, arrived, from: "\(senders)", elsewhere, within: limit, at: sourceLocation) {
            predicate($0)
        }
    }

    /// Runs `action`, then returns the first mail of type `M` from any sender of type `S` that
    /// satisfies `predicate`, with its sender, waiting for it up to `limit`:
    /// ``expectMail(_:from:within:sourceLocation:during:where:)`` for a sender-type subscription,
    /// with the same issue.
    ///
    /// ```swift
    /// let high = await mailroom.expectMail(Score.self, fromAny: Player.self) {
    ///     await mailroom.post(Score(points: 3), from: Player(name: "ada"))
    /// } where: { $0.points > 2 }
    /// #expect(high?.sender.name == "ada")
    /// ```
    @discardableResult
    public nonisolated(nonsending) func expectMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        within limit: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void,
        where predicate: @escaping @Sendable (M) -> Bool
    ) async rethrows -> Envelope<M, S>? {
        let arrived = Arrivals<M>()
        let stream = await subscribe(to: M.self, fromAny: S.self, where: arrived.record)
        let elsewhere = await OtherSenders<M>.watch(self, besides: nil)
        try await action()
        return await Self.match(
            in: stream,
            arrived,
            from: "any \(S.self)",
            elsewhere,
            within: limit,
            at: sourceLocation
        ) {
            predicate($0.mail)
        }
    }

    /// The first element of `stream` that satisfies `predicate`, within `limit`; otherwise the
    /// one issue of a predicate `expectMail`, naming what arrived and what others posted, and nil.
    private static func match<M: Mail, Element: Sendable>(
        in stream: AsyncStream<Element>,
        _ arrived: Arrivals<M>,
        from senders: String,
        _ elsewhere: OtherSenders<M>,
        within limit: Duration,
        at sourceLocation: SourceLocation,
        where predicate: @escaping @Sendable (Element) -> Bool
    ) async -> Element? {
        guard let match = await first(in: stream, within: limit, at: sourceLocation, where: predicate) else {
            let message =
                "expected one \(M.self) from \(senders) that matches the predicate within \(limit); "
                + "none of them did: \(arrived.describe())" + elsewhere.describe(besides: arrived.count)
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
    /// It watches with a tap, not a subscription, so it is not demand: it is never counted by
    /// `subscriberCount`, and it starts no `whileSubscribed` work. To check that such work is
    /// idle, use ``expectWork(_:from:running:within:sourceLocation:)``.
    ///
    /// ```swift
    /// await mailroom.expectNoMail(OrderShipped.self) {
    ///     await cancelOrder(42, via: mailroom)
    /// }
    /// ```
    public nonisolated(nonsending) func expectNoMail<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        try await expectNone(M.self, heard: senders.hears, window: window, action, at: sourceLocation) { arrived in
            "expected no \(M.self) from \(senders); \(arrived.describe())"
        }
    }

    /// Runs `action`, and records an `Issue` at `sourceLocation` if any mail of type `M` from a
    /// sender of type `S` was posted meanwhile, or within `window` after it:
    /// ``expectNoMail(_:from:waiting:sourceLocation:during:)`` for a sender-type subscription,
    /// watched with a tap in the same way, so it is not demand either.
    ///
    /// ```swift
    /// await mailroom.expectNoMail(Score.self, fromAny: Player.self) {
    ///     await mailroom.post(Score(points: 1))  // no sender: no player's score
    /// }
    /// ```
    public nonisolated(nonsending) func expectNoMail<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        waiting window: Duration = .zero,
        sourceLocation: SourceLocation = #_sourceLocation,
        during action: () async throws -> Void
    ) async rethrows {
        let heard: @Sendable ((any Sendable)?) -> Bool = { $0 is S }
        try await expectNone(M.self, heard: heard, window: window, action, at: sourceLocation) { arrived in
            "expected no \(M.self) from any \(S.self); \(arrived.describe())"
        }
    }

    /// The one body of `expectNoMail`: a tap records every mail of `M` whose sender `heard`
    /// accepts, as each post delivers it (a tap's filter runs in the post), then `action` runs.
    private nonisolated(nonsending) func expectNone<M: Mail>(
        _ type: M.Type,
        heard: @escaping @Sendable ((any Sendable)?) -> Bool,
        window: Duration,
        _ action: () async throws -> Void,
        at sourceLocation: SourceLocation,
        message: (Arrivals<M>) -> String
    ) async rethrows {
        let arrived = Arrivals<M>()
        let tap = await self.tap(bufferingPolicy: .bufferingNewest(1)) { posted in
            guard let mail = posted.mail(as: M.self), heard(posted.sender) else { return false }
            return arrived.record(mail)
        }
        try await action()
        if arrived.count == 0, window > .zero {
            _ = await Self.first(in: tap, within: window, at: nil) { _ in true }  // meant to run out
        }
        guard arrived.count == 0 else {
            Issue.record(Comment(rawValue: message(arrived)), sourceLocation: sourceLocation)
            return
        }
    }

    /// Reads `stream` until a mail for which `done` holds, and returns it; nil when `limit`
    /// passes first. A wait at a `sourceLocation` is logged (``WaitLog``).
    static func first<Element: Sendable>(
        in stream: AsyncStream<Element>,
        within limit: Duration,
        at sourceLocation: SourceLocation?,
        where done: @escaping @Sendable (Element) -> Bool
    ) async -> Element? {
        let found = try? await race(limit, at: sourceLocation) { () -> Element? in
            for await mail in stream where done(mail) { return mail }
            return nil
        }
        return found ?? nil
    }
}

/// The mails posted to a helper's subscription, recorded by its filter as each post delivers
/// them, so that what a helper reports is exact however late its reading task runs.
final class Arrivals<M: Mail>: Sendable {
    private let received = Locked<[M]>([])

    /// Records one mail; always accepts it. A subscription's `where:` filter, run at post time.
    @Sendable func record(_ mail: M) -> Bool {
        received.withLock { $0.append(mail) }
        return true
    }

    var mails: [M] { received.withLock { $0 } }

    var count: Int { received.withLock { $0.count } }

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

/// Mail of the expected type that a tap saw posted by any sender: when an expectation pinned to
/// one sender fails, the mail that came from another is the clue.
///
/// A tap, so that it is never counted: not by `subscriberCount`, not in a post's `Receipt`.
/// Watches only when the expectation names senders (with `.everyone`, nothing is elsewhere).
private final class OtherSenders<M: Mail>: Sendable {
    private typealias Posted = [(mail: M, sender: String)]

    /// Written by the tap's filter, which holds it and not this object: the tap's stream, held
    /// here, is then the only link, and dropping this drops the tap.
    private let posted: Locked<Posted>
    /// Keeps the tap subscribed for as long as the expectation runs.
    private let tap: AsyncStream<PostedMail>?

    private init(posted: Locked<Posted>, tap: AsyncStream<PostedMail>?) {
        self.posted = posted
        self.tap = tap
    }

    /// Watches unless `senders` is everyone; nil stands for a sender type, which has others too.
    static func watch(_ mailroom: Mailroom, besides senders: Senders?) async -> OtherSenders {
        let posted = Locked<Posted>([])
        if let senders, senders.isEveryone {
            return OtherSenders(posted: posted, tap: nil)
        }
        let tap = await mailroom.tap(bufferingPolicy: .bufferingNewest(0)) { mail in
            guard let typed = mail.mail(as: M.self) else { return false }
            let sender = mail.sender.map { String(describing: $0) } ?? "no sender"
            posted.withLock { $0.append((typed, sender)) }
            return false  // recorded here; nothing is buffered
        }
        return OtherSenders(posted: posted, tap: tap)
    }

    /// "; every Ping posted meanwhile (2, 1 of them from other senders): Ping(id: 1) from grill,
    /// Ping(id: 2) from salad", or nothing when no mail of the type came from another sender.
    func describe(besides matched: Int) -> String {
        let posted = self.posted.withLock { $0 }
        // The tap sees every post of the type; those the expectation heard are among them.
        guard tap != nil, posted.count > matched else { return "" }
        let shown = posted.prefix(10).map { "\($0.mail) from \($0.sender)" }
        let rest = posted.count > 10 ? ", and \(posted.count - 10) more" : ""
        return "; every \(M.self) posted meanwhile (\(posted.count), \(posted.count - matched) of them from other "
            + "senders): " + shown.joined(separator: ", ") + rest
    }
}
