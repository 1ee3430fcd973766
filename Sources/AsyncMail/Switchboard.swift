import Synchronization

/// The subscription registry of one ``Mailroom``, behind a lock.
///
/// It is a lock and not actor state because AsyncStream runs a termination handler
/// synchronously, on whatever thread cancels or drops the stream, and *before* the
/// consumer's loop sees the end. Removing the subscription right there, under this lock,
/// is what makes removal deterministic: once a consumer's loop has exited, no count
/// includes it, with no actor hop, polling or later cleanup pass.
///
/// Two locks, always taken in this order:
/// - `deliveryOrder` is held for a whole post (capture and yields), so posts reach every
///   subscriber in one order without an actor hop per post.
/// - `registry` is a leaf: nothing that enters the concurrency runtime happens while it is
///   held. Task cancellation runs termination handlers (which take `registry`) while holding
///   the cancelled task's runtime lock, and yielding needs that same task lock, so yielding
///   under `registry` could deadlock. Continuations are yielded to, finished and released
///   only after unlocking it. Termination handlers never take `deliveryOrder`, so holding it
///   across yields cannot form a cycle.
final class Switchboard: Sendable {
    struct Registry {
        /// Route tables by mail type identity; a table is dropped as soon as it is empty.
        var tables: [ObjectIdentifier: any RouteTable] = [:]
        /// The last subscription id handed out.
        var lastID: SubscriptionID = 0
        /// Set by `close()`: from then on nothing is registered and nothing is delivered.
        var isClosed = false
        /// Taps on every post, whatever its type; empty (one check per post) unless someone taps.
        let taps = Subscribers<PostedMail>()

        /// The table of `M`, made if there is none yet.
        mutating func routes<M: Mail>(for type: M.Type) -> Routes<M> {
            let typeKey = ObjectIdentifier(M.self)
            if let table = tables[typeKey] {
                // Tables are keyed by `M`'s identity, so this one is exactly `Routes<M>`.
                return unsafeDowncast(table, to: Routes<M>.self)
            }
            let routes = Routes<M>()
            tables[typeKey] = routes
            return routes
        }
    }

    private let registry = Mutex(Registry())

    /// Held for the whole of each post, which makes the order posts take it the one order
    /// every subscriber sees.
    private let deliveryOrder = Mutex(())

    /// Runs `body` under the lock; the one way into `registry`.
    private func withRegistry<Result: Sendable>(_ body: (inout Registry) -> Result) -> Result {
        registry.withLock { registry in
            #if ASYNCMAIL_TSAN
            ThreadSanitizer.acquire(self)
            defer { ThreadSanitizer.release(self) }
            #endif
            return body(&registry)
        }
    }

    deinit {
        // A mailroom that goes away must not leave its consumers waiting forever.
        // The termination handlers find `self` already nil, so they do nothing.
        close()
    }

    // MARK: Subscribing

    /// Registers a new stream in `M`'s route table before returning it, so nothing posted
    /// afterwards can be missed.
    ///
    /// `insert` files the subscriber into the right route and returns the continuations of
    /// any departed sender it displaced, to be finished after unlocking.
    func subscribe<M: Mail, Element: Sendable>(
        _ type: M.Type,
        filter: Filter,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        replay: ((Routes<M>) -> Element?)? = nil,
        insert: (Routes<M>, Subscriber<Element>) -> [any Finishable]
    ) -> AsyncStream<Element> {
        // Replaying registers under the delivery lock, so no newer post can overtake the
        // replayed mail. The stream has no consumer yet, so yielding to it wakes no task.
        inDeliveryOrder(if: replay != nil) {
            register(
                at: .route(typeKey: ObjectIdentifier(M.self), filter: filter),
                bufferingPolicy: bufferingPolicy,
                accepts: accepts
            ) { registry, subscriber in
                let routes = registry.routes(for: M.self)
                let replayed = replay?(routes).flatMap { mail in accepts?(mail) == false ? nil : mail }
                return (insert(routes, subscriber), replayed)
            }
        }
    }

    /// Registers a tap on every post before returning it.
    func subscribeToAll(
        bufferingPolicy: AsyncStream<PostedMail>.Continuation.BufferingPolicy,
        accepts: (@Sendable (PostedMail) -> Bool)?
    ) -> AsyncStream<PostedMail> {
        register(at: .tap, bufferingPolicy: bufferingPolicy, accepts: accepts) { registry, subscriber in
            registry.taps.add(subscriber)
            return ([], nil)
        }
    }

    /// The one way a stream is registered: made, filed under the lock with a fresh id (or
    /// finished at once when the mailroom is closed), and given a termination handler that
    /// removes it from `placement`.
    ///
    /// `file` puts the subscriber in place and returns the continuations it displaced (to be
    /// finished after unlocking) and the mail to replay into the new stream, if any.
    private func register<Element: Sendable>(
        at placement: Placement,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        file: (inout Registry, Subscriber<Element>) -> (displaced: [any Finishable], replayed: Element?)
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self,
            bufferingPolicy: bufferingPolicy
        )
        let registered: (id: SubscriptionID, displaced: [any Finishable], replayed: Element?)? = withRegistry {
            registry in
            guard !registry.isClosed else { return nil }
            registry.lastID += 1
            let filed = file(&registry, Subscriber(id: registry.lastID, continuation: continuation, accepts: accepts))
            return (registry.lastID, filed.displaced, filed.replayed)
        }
        guard let registered else {
            continuation.finish()
            return stream
        }
        for continuation in registered.displaced { continuation.finish() }
        if let replayed = registered.replayed { continuation.yield(replayed) }
        let id = registered.id
        continuation.onTermination = { [weak self] _ in
            self?.remove(id, from: placement)
        }
        return stream
    }

    /// Runs `body` holding the delivery lock when `serialised`, and without it otherwise.
    private func inDeliveryOrder<Result: Sendable>(if serialised: Bool, _ body: () -> Result) -> Result {
        serialised ? deliveryOrder.withLock { _ in body() } : body()
    }

    private func remove(_ id: SubscriptionID, from placement: Placement) {
        let removed: (any Finishable)? = withRegistry { registry in
            switch placement {
            case .tap:
                return registry.taps.remove(id)
            case .route(let typeKey, let filter):
                guard let table = registry.tables[typeKey] else { return nil }
                let removed = table.remove(id, from: filter)
                if table.isUnused { registry.tables[typeKey] = nil }
                return removed
            }
        }
        // Released here, outside the lock.
        _ = removed
    }

    // MARK: Keeping the latest mail

    /// Opts `M` in to keeping its latest mail; idempotent.
    func retainLatest<M: Mail>(_ type: M.Type) {
        withRegistry { registry in
            guard !registry.isClosed else { return }
            let routes = registry.routes(for: M.self)
            if routes.latest == nil { routes.latest = LatestMail() }
        }
    }

    /// The latest mail of `M` (from `key`'s sender, when given), after dropping departed senders' mail.
    func latest<M: Mail>(_ type: M.Type, from key: SenderKey?) -> M? {
        withRegistry { registry in
            guard let table = registry.tables[ObjectIdentifier(M.self)] else { return nil }
            let routes = unsafeDowncast(table, to: Routes<M>.self)
            routes.latest?.sweep()
            guard let key else { return routes.latest?.newest }
            return routes.latest?.newest(from: key)
        }
    }

    /// Object senders with mail kept for `M`; lets tests prove a departed sender's mail is freed.
    func retainedObjectSenderCount<M: Mail>(for type: M.Type) -> Int {
        withRegistry { registry in
            guard let table = registry.tables[ObjectIdentifier(M.self)] else { return 0 }
            return unsafeDowncast(table, to: Routes<M>.self).latest?.objectSenderCount ?? 0
        }
    }

    // MARK: Posting

    func post<M: Mail>(_ mail: M) -> Receipt {
        deliveryOrder.withLock { _ in
            recipients(of: M.self, from: Never?.none, key: .none, recording: mail).deliver(mail, from: nil)
        }
    }

    func post<M: Mail, S: Sendable>(_ mail: M, from sender: S) -> Receipt {
        let key = SenderKey(sender)
        return deliveryOrder.withLock { _ in
            recipients(of: M.self, from: sender, key: key, recording: mail).deliver(mail, from: sender)
        }
    }

    func post<M: Mail>(contentsOf mails: some Sequence<M>) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        return deliveryOrder.withLock { _ in
            recipients(of: M.self, from: Never?.none, key: .none, recording: mails.last)
                .deliver(contentsOf: mails, from: nil)
        }
    }

    func post<M: Mail, S: Sendable>(contentsOf mails: some Sequence<M>, from sender: S) -> Receipt {
        let key = SenderKey(sender)
        let mails = Array(mails)  // read once: the last one is kept for replay
        return deliveryOrder.withLock { _ in
            recipients(of: M.self, from: sender, key: key, recording: mails.last)
                .deliver(contentsOf: mails, from: sender)
        }
    }

    /// Captures who a post must reach, first ending a subscription or two whose sender is gone.
    ///
    /// Only the capture happens under `registry`; the caller yields after it is released
    /// (see ``Recipients`` for why).
    private func recipients<M: Mail, S: Sendable>(
        of type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording mail: M?
    ) -> Recipients<M, S> {
        let typeKey = ObjectIdentifier(M.self)
        let (recipients, departed): (Recipients<M, S>, [any Finishable]) = withRegistry { registry in
            var recipients = Recipients<M, S>()
            var departed: [any Finishable] = []
            if let table = registry.tables[typeKey] {
                let routes = unsafeDowncast(table, to: Routes<M>.self)
                departed = routes.sweepDepartedSenders(budget: Routes<M>.sweepBudgetPerPost)
                if let mail, routes.latest != nil { routes.latest?.record(mail, key: key) }
                if routes.isUnused { registry.tables[typeKey] = nil }
                recipients = routes.recipients(from: sender, key: key)
            }
            if registry.taps.count > 0 { recipients.taps = registry.taps.entries }
            return (recipients, departed)
        }
        for continuation in departed { continuation.finish() }
        return recipients
    }

    // MARK: Counting and closing

    func subscriberCount<M: Mail>(for type: M.Type) -> Int {
        let typeKey = ObjectIdentifier(M.self)
        let (count, departed): (Int, [any Finishable]) = withRegistry { registry in
            guard let table = registry.tables[typeKey] else { return (0, []) }
            let routes = unsafeDowncast(table, to: Routes<M>.self)
            let departed = routes.sweepDepartedSenders(budget: nil)
            routes.latest?.sweep()
            if routes.isUnused { registry.tables[typeKey] = nil }
            return (routes.count, departed)
        }
        for continuation in departed { continuation.finish() }
        return count
    }

    /// The number of live taps; lets tests prove a tap is removed.
    var tapCount: Int {
        withRegistry { $0.taps.count }
    }

    /// The number of mail types that currently have a route table; lets tests prove nothing leaks.
    var routeTableCount: Int {
        withRegistry { $0.tables.count }
    }

    /// Ends every stream and refuses new ones; safe to call more than once.
    func close() {
        let all: [any Finishable] = withRegistry { registry in
            registry.isClosed = true
            defer { registry.tables = [:] }
            return registry.tables.values.flatMap { $0.removeAll() } + registry.taps.removeAll()
        }
        for continuation in all { continuation.finish() }
    }
}
