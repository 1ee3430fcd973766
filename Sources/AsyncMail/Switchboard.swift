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
@usableFromInline
final class Switchboard: Sendable {
    @usableFromInline
    struct Registry {
        /// Route tables by mail type identity; a table is dropped as soon as it is empty.
        @usableFromInline var tables: [ObjectIdentifier: any RouteTable] = [:]
        /// The table the last post looked up, so that a run of posts of one type skips hashing
        /// the type. Cleared whenever its table is dropped: see ``dropTable(_:)``.
        @usableFromInline var recent: (key: ObjectIdentifier, table: any RouteTable)?
        /// Set by `close()`: from then on nothing is registered and nothing is delivered.
        @usableFromInline var isClosed = false
        /// What ``Mailroom/onClose(_:)`` registered, to run once after `close()`.
        @usableFromInline var closeActions: [Int: @Sendable () -> Void] = [:]
        /// The key the next close action gets.
        @usableFromInline var nextCloseAction = 0
        /// Taps on every post, whatever its type; empty (one check per post) unless someone taps.
        @usableFromInline let taps = Subscribers<PostedMail>()

        @usableFromInline init() {}

        /// The table of `M`, made if there is none yet.
        @inlinable
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

        /// The table of `M`, if it has one.
        @inlinable
        func existingRoutes<M: Mail>(for type: M.Type) -> Routes<M>? {
            guard let table = tables[ObjectIdentifier(M.self)] else { return nil }
            // Tables are keyed by `M`'s identity, so this one is exactly `Routes<M>`.
            return unsafeDowncast(table, to: Routes<M>.self)
        }

        /// The table of the type `key` names, if it has one; remembered for the next lookup.
        @inlinable @inline(__always)
        mutating func table(_ key: ObjectIdentifier) -> (any RouteTable)? {
            if let recent, recent.key == key { return recent.table }
            guard let table = tables[key] else { return nil }
            recent = (key, table)
            return table
        }

        /// Drops the table of the type `key` names. Every removal but `close()`'s (which clears
        /// `recent` too) goes through here, so `recent` never names a dropped table.
        @inlinable
        mutating func dropTable(_ key: ObjectIdentifier) {
            tables[key] = nil
            if recent?.key == key { recent = nil }
        }

        /// Removes a subscription to `M`, and `M`'s table with it once nothing is left in it.
        @inlinable
        mutating func remove<M: Mail, Element>(
            _ subscriber: Subscriber<Element>,
            of type: M.Type,
            from filter: Filter
        ) -> (any Finishable)? {
            let typeKey = ObjectIdentifier(M.self)
            guard let table = tables[typeKey] else { return nil }
            let routes = unsafeDowncast(table, to: Routes<M>.self)
            let removed = routes.remove(subscriber, from: filter)
            if routes.isUnused { dropTable(typeKey) }
            return removed
        }
    }

    @usableFromInline let registry = Mutex(Registry())

    /// Held for the whole of each post, which makes the order posts take it the one order
    /// every subscriber sees.
    @usableFromInline let deliveryOrder = Mutex(())

    /// ThreadSanitizer's annotations when the process runs under it (see ``ThreadSanitizer``).
    @usableFromInline let threadSanitizer = ThreadSanitizer.current

    @usableFromInline init() {}

    /// Runs `body` under the lock; the one way into `registry`.
    @inlinable
    func withRegistry<Result: Sendable>(_ body: (inout Registry) -> Result) -> Result {
        registry.withLock { registry in
            threadSanitizer?.acquire(self)
            defer { threadSanitizer?.release(self) }
            return body(&registry)
        }
    }

    /// Runs `body` holding the delivery lock; the one way into `deliveryOrder`.
    @inlinable @inline(__always)
    func inDeliveryOrder<Result: Sendable>(_ body: () -> Result) -> Result {
        deliveryOrder.withLock { _ in
            // A second address inside this object: the delivery lock is a lock of its own.
            threadSanitizer?.acquire(self, offset: 1)
            defer { threadSanitizer?.release(self, offset: 1) }
            return body()
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
    @inlinable
    func subscribe<M: Mail, Element: Sendable>(
        _ type: M.Type,
        filter: Filter,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        replay: ((Routes<M>) -> Element?)? = nil,
        insert: (Routes<M>, Subscriber<Element>) -> [any Finishable]
    ) -> Subscription<Element> {
        // Replaying registers under the delivery lock, so no newer post can overtake the
        // replayed mail. The stream has no consumer yet, so yielding to it wakes no task.
        let (subscription, displaced) = inDeliveryOrder(if: replay != nil) {
            register(
                filter: filter,
                bufferingPolicy: bufferingPolicy,
                accepts: accepts,
                file: { registry, subscriber in
                    let routes = registry.routes(for: M.self)
                    return (insert(routes, subscriber), replay?(routes))
                },
                unfile: { registry, subscriber, filter in registry.remove(subscriber, of: M.self, from: filter) }
            )
        }
        // Finished with no lock held: ending a stream runs its termination handler and can
        // release the last reference to a filter's captures.
        for continuation in displaced { continuation.finish() }
        return subscription
    }

    /// Registers a tap on every post before returning it.
    @usableFromInline
    func subscribeToAll(
        bufferingPolicy: AsyncStream<PostedMail>.Continuation.BufferingPolicy,
        accepts: (@Sendable (PostedMail) -> Bool)?
    ) -> AsyncStream<PostedMail> {
        register(
            filter: .everyone,
            bufferingPolicy: bufferingPolicy,
            accepts: accepts,
            file: { registry, subscriber in
                registry.taps.add(subscriber)
                return ([], nil)
            },
            unfile: { registry, subscriber, _ in registry.taps.remove(subscriber) }
        ).subscription.stream
    }

    /// Takes a subscription out of the registry; what a stream's termination handler runs.
    ///
    /// It gets everything it needs as arguments, so in specialised code the closure captures
    /// nothing and the termination handler costs one allocation, not two.
    @usableFromInline
    typealias Unfile<Element: Sendable> = @Sendable (inout Registry, Subscriber<Element>, Filter) -> (any Finishable)?

    /// The one way a stream is registered: made, given a termination handler that takes it out
    /// again with `unfile`, and filed under the lock (or finished at once when the mailroom is
    /// closed).
    ///
    /// `file` puts the subscriber in place and returns the continuations it displaced and the
    /// mail to replay into the new stream, if any. The replayed mail passes the subscription's
    /// filter after the registry lock is released (a filter is user code), and the displaced
    /// continuations are returned for the caller to finish once it holds no lock.
    @inlinable
    func register<Element: Sendable>(
        filter: Filter,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        file: (inout Registry, Subscriber<Element>) -> (displaced: [any Finishable], replayed: Element?),
        unfile: @escaping Unfile<Element>
    ) -> (subscription: Subscription<Element>, displaced: [any Finishable]) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self,
            bufferingPolicy: bufferingPolicy
        )
        let subscriber = Subscriber(continuation: continuation, accepts: accepts)
        // Set before filing: once filed, `close()` may finish the stream at any moment, and a
        // handler set on a finished stream would never run. The handler holds the subscriber
        // (which holds the continuation, whose storage holds the handler); that cycle ends when
        // the handler runs, which every way a stream ends does exactly once: dropped, cancelled,
        // finished by `close()`, by a departed sender, or by this mailroom's deinit.
        continuation.onTermination = { [weak self] _ in
            self?.unregister(subscriber, from: filter, using: unfile)
        }
        let filed: (displaced: [any Finishable], replayed: Element?)? = withRegistry { registry in
            guard !registry.isClosed else { return nil }
            return file(&registry, subscriber)
        }
        let subscription = Subscription(stream: stream, continuation: continuation)
        guard let filed else {
            continuation.finish()
            return (subscription, [])
        }
        if let replayed = filed.replayed, accepts?(replayed) != false { continuation.yield(replayed) }
        return (subscription, filed.displaced)
    }

    /// Runs `body` holding the delivery lock when `serialised`, and without it otherwise.
    @inlinable
    func inDeliveryOrder<Result: Sendable>(if serialised: Bool, _ body: () -> Result) -> Result {
        serialised ? inDeliveryOrder(body) : body()
    }

    @inlinable
    func unregister<Element>(_ subscriber: Subscriber<Element>, from filter: Filter, using unfile: Unfile<Element>) {
        let removed = withRegistry { unfile(&$0, subscriber, filter) }
        // Released here, outside the lock: dropping a continuation can run a termination handler.
        _ = removed
    }

    // MARK: Keeping the latest mail

    /// Opts `M` in to keeping its latest mail; idempotent.
    @usableFromInline
    func retainLatest<M: Mail>(_ type: M.Type) {
        withRegistry { registry in
            guard !registry.isClosed else { return }
            let routes = registry.routes(for: M.self)
            if routes.latest == nil { routes.latest = LatestMail() }
        }
    }

    /// The latest mail of `M` (from `key`'s sender, when given), after dropping departed senders' mail.
    @usableFromInline
    func latest<M: Mail>(_ type: M.Type, from key: SenderKey?) -> M? {
        let (latest, swept) = withRegistry { registry -> (M?, [M]) in
            guard let routes = registry.existingRoutes(for: M.self), let kept = routes.latest else { return (nil, []) }
            let swept = kept.sweep()
            guard let key else { return (kept.newestFromLiveSender, swept) }
            return (kept.newest(from: key), swept)
        }
        _ = swept  // released here, with no lock held: a kept mail's deinit is user code
        return latest
    }

    // MARK: Posting

    @inlinable
    func post<M: Mail>(_ mail: M) -> Receipt {
        deliverInOrder(M.self, from: Never?.none, key: .none, recording: mail) { $0.deliver(mail, from: nil) }
    }

    @inlinable
    func post<M: Mail, S: Sendable>(_ mail: M, from sender: S) -> Receipt {
        switch SenderKey.unwrap(sender) {
        case .asIs: post(unwrapped: mail, from: sender)
        case .contents(let contents): post(opened: [mail], from: contents)
        case .absent: post(mail)
        }
    }

    /// Posts from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrapped mail: M, from sender: S) -> Receipt {
        let key = SenderKey(sender)
        return deliverInOrder(M.self, from: sender, key: key, recording: mail) { $0.deliver(mail, from: sender) }
    }

    @inlinable
    func post<M: Mail>(contentsOf mails: some Sequence<M>) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        return deliverInOrder(M.self, from: Never?.none, key: .none, recording: mails.last) {
            $0.deliver(contentsOf: mails, from: nil)
        }
    }

    @inlinable
    func post<M: Mail, S: Sendable>(contentsOf mails: some Sequence<M>, from sender: S) -> Receipt {
        switch SenderKey.unwrap(sender) {
        case .asIs: post(unwrappedContentsOf: Array(mails), from: sender)
        case .contents(let contents): post(opened: Array(mails), from: contents)
        case .absent: post(contentsOf: mails)
        }
    }

    /// Posts a batch from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrappedContentsOf mails: [M], from sender: S) -> Receipt {
        deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last) {
            $0.deliver(contentsOf: mails, from: sender)
        }
    }

    /// Posts mail from a sender that the post site saw only inside an existential box or an
    /// `Optional`: pinned routes look inside as usual, and sender-type subscriptions are found by
    /// the sender's own type, in a second look-up that the common path never pays for.
    @usableFromInline
    func post<M: Mail>(opened mails: [M], from sender: any Sendable) -> Receipt {
        deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last) { recipients in
            var receipt = recipients.deliver(contentsOf: mails, from: sender)
            let envelopes = withRegistry { $0.existingRoutes(for: M.self)?.envelopes(forOwnTypeOf: sender) }
            if let envelopes {
                for mail in mails { envelopes.deliver(mail, &receipt) }
            }
            return receipt
        }
    }

    /// One post: captures its recipients and delivers to them holding the delivery lock, then,
    /// holding no lock, finishes departed senders' streams and releases what the post let go of
    /// (the snapshot, which may hold the last reference to a subscription, and replaced kept mail).
    @inlinable @inline(__always)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording last: M?,
        deliver: (Recipients<M, S>) -> Receipt
    ) -> Receipt {
        let (receipt, recipients, leftovers) = inDeliveryOrder {
            let (recipients, leftovers) = capture(M.self, from: sender, key: key, recording: last)
            return (deliver(recipients), recipients, leftovers)
        }
        leftovers.perform()
        _ = recipients
        return receipt
    }

    /// Captures who a post must reach, first ending subscriptions whose sender is gone.
    ///
    /// Only the capture happens under `registry`; the caller yields after it is released (see
    /// ``Recipients`` for why), and performs the ``PostLeftovers`` once it holds no lock at all.
    @inlinable
    func capture<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording mail: M?
    ) -> (Recipients<M, S>, PostLeftovers<M>) {
        let typeKey = ObjectIdentifier(M.self)
        return withRegistry { registry in
            guard let table = registry.table(typeKey) else {
                var recipients = Recipients<M, S>()
                if registry.taps.count > 0 { recipients.taps = registry.taps.entries }
                return (recipients, PostLeftovers())
            }
            let routes = unsafeDowncast(table, to: Routes<M>.self)
            let departed = routes.sweepDepartedSendersAfterPost()
            var displaced: LatestMail<M>.Displaced?
            if let mail, let latest = routes.latest { displaced = latest.record(mail, key: key) }
            if routes.isUnused { registry.dropTable(typeKey) }
            var recipients = routes.recipients(from: sender, key: key)
            if registry.taps.count > 0 { recipients.taps = registry.taps.entries }
            return (recipients, PostLeftovers(departed: departed, displaced: displaced))
        }
    }

    // MARK: Counting and closing

    @usableFromInline
    func subscriberCount<M: Mail>(for type: M.Type) -> Int {
        let (count, departed, swept) = withRegistry { registry -> (Int, [any Finishable], [M]) in
            guard let routes = registry.existingRoutes(for: M.self) else { return (0, [], []) }
            let departed = routes.sweepDepartedSenders()
            let swept = routes.latest?.sweep() ?? []
            if routes.isUnused { registry.dropTable(ObjectIdentifier(M.self)) }
            return (routes.count, departed, swept)
        }
        for continuation in departed { continuation.finish() }
        _ = swept  // released with no lock held
        return count
    }

    /// Ends every stream and refuses new ones; safe to call more than once.
    ///
    /// The route tables leave the registry under the lock and are released after it: they hold
    /// kept mail and filters, whose deinits are user code.
    @usableFromInline
    func close() {
        let (all, tables, actions): ([any Finishable], Discarded, [@Sendable () -> Void]) = withRegistry { registry in
            registry.isClosed = true
            registry.recent = nil
            defer {
                registry.tables = [:]
                registry.closeActions = [:]
            }
            let all = registry.tables.values.flatMap { $0.removeAll() } + registry.taps.removeAll()
            return (all, Discarded(Array(registry.tables.values)), Array(registry.closeActions.values))
        }
        for continuation in all { continuation.finish() }
        _ = tables  // released with no lock held
        for action in actions { action() }
    }

    // MARK: Close actions

    /// Registers `action` to run once after `close()`; nil (and not run) when already closed.
    func addCloseAction(_ action: @escaping @Sendable () -> Void) -> Int? {
        withRegistry { registry in
            guard !registry.isClosed else { return nil }
            registry.nextCloseAction += 1
            registry.closeActions[registry.nextCloseAction] = action
            return registry.nextCloseAction
        }
    }

    /// Forgets a close action that has not run; released after unlocking, as it may hold user values.
    func removeCloseAction(_ key: Int) {
        let removed = withRegistry { $0.closeActions.removeValue(forKey: key) }
        _ = removed
    }
}

/// What a post leaves to do once it holds no lock: finish the streams of departed senders, and
/// release the kept mail it replaced (a mail's deinit is user code, so it must not run under a lock).
@usableFromInline
struct PostLeftovers<M: Mail>: Sendable {
    /// Continuations of subscriptions whose pinned sender is gone.
    @usableFromInline let departed: [any Finishable]
    /// Kept mail this post replaced; released when this value is.
    @usableFromInline let displaced: LatestMail<M>.Displaced?

    @inlinable
    init(departed: [any Finishable] = [], displaced: LatestMail<M>.Displaced? = nil) {
        self.departed = departed
        self.displaced = displaced
    }

    /// Finishes the departed streams; everything else goes when this value does.
    @inlinable
    func perform() {
        for continuation in departed { continuation.finish() }
    }
}
