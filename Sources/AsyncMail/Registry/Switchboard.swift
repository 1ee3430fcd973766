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
        @usableFromInline var _tables: [ObjectIdentifier: any AnyRouteTable] = [:]
        /// The table the last post looked up, so that a run of posts of one type skips hashing
        /// the type. Cleared whenever its table is dropped: see ``dropTable(_:)``.
        @usableFromInline var _recent: (key: ObjectIdentifier, table: any AnyRouteTable)?
        /// Set by `close()`: from then on nothing is registered and nothing is delivered.
        @usableFromInline var _isClosed = false
        /// What ``Mailroom/onClose(_:)`` registered, to run once after `close()`.
        @usableFromInline var _closeActions: [Int: @Sendable () -> Void] = [:]
        /// The key the next close action gets.
        @usableFromInline var _nextCloseAction = 0
        /// Taps on every post, whatever its type; empty (one check per post) unless someone taps.
        @usableFromInline let _taps = Subscribers<PostedMail>()

        @usableFromInline init() {}

        /// The table of `M`, made if there is none yet.
        @inlinable
        mutating func table<M: Mail>(for type: M.Type) -> RouteTable<M> {
            if let table = existingTable(for: M.self) { return table }
            let table = RouteTable<M>()
            _tables[ObjectIdentifier(M.self)] = table
            return table
        }

        /// The table of `M`, if it has one.
        @inlinable
        func existingTable<M: Mail>(for type: M.Type) -> RouteTable<M>? {
            _tables[ObjectIdentifier(M.self)].map { Self.downcast($0, to: M.self) }
        }

        /// The table of `M`, if it has one, by way of the table the last post used: a run of
        /// posts of one type then skips hashing the type.
        @inlinable @inline(__always)
        mutating func recentTable<M: Mail>(for type: M.Type) -> RouteTable<M>? {
            let key = ObjectIdentifier(M.self)
            if let _recent, _recent.key == key { return Self.downcast(_recent.table, to: M.self) }
            guard let table = _tables[key] else { return nil }
            _recent = (key, table)
            return Self.downcast(table, to: M.self)
        }

        /// `table` as the table of `M`, without a dynamic cast.
        ///
        /// The one place a table's type is taken on trust. It is safe because a table is only
        /// ever stored under the identity of its own mail type: ``table(for:)`` stores a
        /// `RouteTable<M>` under `ObjectIdentifier(M.self)`, `recent` only caches what `tables`
        /// holds under the same key, and every caller passes the `M` whose identity it looked up.
        @inlinable @inline(__always)
        static func downcast<M: Mail>(_ table: any AnyRouteTable, to type: M.Type) -> RouteTable<M> {
            unsafeDowncast(table, to: RouteTable<M>.self)
        }

        /// Drops the table of the type `key` names. Every removal but `close()`'s (which clears
        /// `recent` too) goes through here, so `recent` never names a dropped table.
        @inlinable
        mutating func dropTable(_ key: ObjectIdentifier) {
            _tables[key] = nil
            if _recent?.key == key { _recent = nil }
        }

        /// Files `subscriber` where `route` says; `M` is the mail type of a table route.
        /// Returns the continuations of a departed sender it displaced.
        @inlinable
        mutating func add<M: Mail, Element>(
            _ subscriber: Subscriber<Element>,
            to route: Route,
            of type: M.Type,
            pinning sender: AnyObject?
        ) -> [any Finishable] {
            switch route {
            case .tap:
                if let tap = subscriber as? Subscriber<PostedMail> { _taps.add(tap) }
                return []
            case .table(_, let place):
                return table(for: M.self).add(subscriber, at: place, pinning: sender)
            }
        }

        /// Takes `subscriber` out of `route`, and a table with it once nothing is left in it;
        /// `M` is the mail type the subscription was filed with. Returns the removed
        /// continuation, to be released after unlocking.
        @inlinable
        mutating func remove<M: Mail, Element>(
            _ subscriber: Subscriber<Element>,
            from route: Route,
            of type: M.Type
        ) -> (any Finishable)? {
            switch route {
            case .tap:
                return _taps.removeErased(subscriber)
            case .table(let key, let place):
                guard let table = existingTable(for: M.self) else { return nil }
                let removed = table.remove(subscriber, at: place)
                if table.isUnused { dropTable(key) }
                return removed
            }
        }
    }

    @usableFromInline let _registry = Mutex(Registry())

    /// Held for the whole of each post, which makes the order posts take it the one order
    /// every subscriber sees (see ``DeliveryLock``).
    @usableFromInline let _deliveryOrder = DeliveryLock()

    /// ThreadSanitizer's annotations when the process runs under it (see ``ThreadSanitizer``).
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

    /// Called with the delivery lock's state just before a replayed mail is yielded; lets tests
    /// prove the replay happens in the delivery order (see `Mailroom+Testing.swift`).
    @usableFromInline let _replayProbe: (@Sendable (_ deliveryOrderIsHeld: Bool) -> Void)?

    /// What metrics and tracing see of this mailroom; `nil` costs a check per post and per stream.
    @usableFromInline let _instrumentation: (any MailroomInstrumentation)?

    @usableFromInline
    init(
        instrumentation: (any MailroomInstrumentation)? = nil,
        replayProbe: (@Sendable (_ deliveryOrderIsHeld: Bool) -> Void)? = nil
    ) {
        self._instrumentation = instrumentation
        self._replayProbe = replayProbe
    }

    /// Runs `body` under the lock; the one way into `registry`.
    @inlinable
    func withRegistry<Result: Sendable>(_ body: (inout Registry) -> Result) -> Result {
        _registry.withLock(annotating: _threadSanitizer, as: self, body)
    }

    /// Runs `body` holding the delivery lock; the one way into `deliveryOrder`.
    @inlinable @inline(__always)
    func inDeliveryOrder<Result: Sendable>(_ body: () -> Result) -> Result {
        _deliveryOrder.withLock(body)
    }

    deinit {
        // A mailroom that goes away must not leave its consumers waiting forever.
        // The termination handlers find `self` already nil, so they do nothing.
        close()
    }

    // MARK: Subscribing

    /// Registers a new stream at `place` in `M`'s route table before returning it, so nothing
    /// posted afterwards can be missed. An object place needs the object, `sender`.
    @inlinable
    func subscribe<M: Mail, Element: Sendable>(
        _ type: M.Type,
        at place: TableRoute,
        pinning sender: AnyObject? = nil,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        endSignal: EndSignal? = nil,
        handsOnContext: Bool = false,
        replay: ((RouteTable<M>) -> Element?)? = nil
    ) -> Subscription<Element> {
        // Replaying registers under the delivery lock, so no newer post can overtake the
        // replayed mail. The stream has no consumer yet, so yielding to it wakes no task.
        let (subscription, afterUnlock) = inDeliveryOrder(if: replay != nil) {
            register(
                M.self,
                at: .table(ObjectIdentifier(M.self), place),
                pinning: sender,
                bufferingPolicy: bufferingPolicy,
                accepts: accepts,
                endSignal: endSignal,
                handsOnContext: handsOnContext,
                replay: replay
            )
        }
        afterUnlock.perform()
        if replay != nil { _deliveryOrder.runDeferred() }  // posts the replay's filter made
        return subscription
    }

    /// Registers a tap on every post before returning it.
    @usableFromInline
    func subscribeToAll(
        bufferingPolicy: AsyncStream<PostedMail>.Continuation.BufferingPolicy,
        accepts: (@Sendable (PostedMail) -> Bool)?,
        endSignal: EndSignal? = nil
    ) -> Subscription<PostedMail> {
        let (subscription, afterUnlock) = register(
            NoMail.self,
            at: .tap,
            pinning: nil,
            bufferingPolicy: bufferingPolicy,
            accepts: accepts,
            endSignal: endSignal,
            handsOnContext: false,
            replay: nil
        )
        afterUnlock.perform()
        return subscription
    }

    /// The one way a stream is registered: made, given a termination handler that takes it out
    /// of `route` again, and filed at `route` under the lock (or finished at once when the
    /// mailroom is closed).
    ///
    /// The mail to replay, if any, is read under the lock and passes the subscription's filter
    /// after it is released (a filter is user code). The continuations of a departed sender that
    /// filing displaced come back in the ``AfterUnlock`` for the caller to finish once it holds
    /// no lock.
    ///
    /// With instrumentation, a bounded stream (`endSignal`), or a consumer that `handsOnContext`,
    /// keeps the contexts of its buffered mail (see ``PostContexts``), and every table route is
    /// reported started now and ended by its termination handler, which runs exactly once.
    @inlinable
    func register<M: Mail, Element: Sendable>(
        _ type: M.Type,
        at route: Route,
        pinning sender: AnyObject?,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        endSignal: EndSignal?,
        handsOnContext: Bool,
        replay: ((RouteTable<M>) -> Element?)?
    ) -> (Subscription<Element>, AfterUnlock<Void>) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self,
            bufferingPolicy: bufferingPolicy
        )
        var contexts: PostContexts?
        if let _instrumentation, endSignal != nil || handsOnContext {
            contexts = PostContexts(instrumentation: _instrumentation)
        }
        let reporting: (any MailroomInstrumentation)?
        switch route {
        case .table: reporting = _instrumentation
        case .tap: reporting = nil
        }
        reporting?.subscriptionStarted(M.self)
        let subscriber = Subscriber(
            continuation: continuation,
            accepts: accepts,
            endSignal: endSignal,
            contexts: contexts
        )
        // Set before filing: once filed, `close()` may finish the stream at any moment, and a
        // handler set on a finished stream would never run. The handler holds the subscriber
        // (which holds the continuation, whose storage holds the handler); that cycle ends when
        // the handler runs, which every way a stream ends does exactly once: dropped, cancelled,
        // finished by `close()`, by a departed sender, or by this mailroom's deinit.
        continuation.onTermination = { [weak self] _ in
            endSignal?.end(.finished)  // a no-op after an overflow, which ended it first
            self?.unregister(subscriber, from: route, of: M.self)
            reporting?.subscriptionEnded(M.self)
        }
        let filed: (displaced: [any Finishable], replayed: Element?)? = withRegistry { registry in
            guard !registry._isClosed else { return nil }
            let displaced = registry.add(subscriber, to: route, of: M.self, pinning: sender)
            return (displaced, replay.flatMap { replay in registry.existingTable(for: M.self).flatMap(replay) })
        }
        let subscription = Subscription(stream: stream, continuation: continuation, contexts: contexts)
        guard let filed else {
            continuation.finish()
            return (subscription, AfterUnlock(releasing: ()))
        }
        if let replayed = filed.replayed, accepts?(replayed) != false {
            if let _replayProbe { _replayProbe(_deliveryOrder.isHeldByCurrentThread) }
            // A replayed mail was posted long ago: its context is not kept.
            contexts?.push(.none)
            if case .dropped = continuation.yield(replayed) { contexts?.discardLast() }
        }
        return (subscription, AfterUnlock(finishing: filed.displaced, releasing: ()))
    }

    /// Runs `body` holding the delivery lock when `serialised`, and without it otherwise.
    @inlinable
    func inDeliveryOrder<Result: Sendable>(if serialised: Bool, _ body: () -> Result) -> Result {
        serialised ? inDeliveryOrder(body) : body()
    }

    /// Takes a subscription out of the registry; what a stream's termination handler runs.
    /// Inlinable, so that in the client's specialised code removal needs no dynamic cast.
    @inlinable
    func unregister<M: Mail, Element>(_ subscriber: Subscriber<Element>, from route: Route, of type: M.Type) {
        let removed = withRegistry { AfterUnlock(releasing: $0.remove(subscriber, from: route, of: M.self)) }
        // Released here, outside the lock: dropping a continuation can run a termination handler.
        removed.perform()
    }

    // MARK: Keeping the latest mail

    /// Opts `M` in to keeping its latest mail; idempotent.
    @usableFromInline
    func retainLatest<M: Mail>(_ type: M.Type) {
        withRegistry { registry in
            guard !registry._isClosed else { return }
            let table = registry.table(for: M.self)
            if table._latest == nil { table._latest = LatestMail() }
        }
    }

    /// The latest mail of `M` (from `key`'s sender, when given), after dropping departed senders' mail.
    @usableFromInline
    func latest<M: Mail>(_ type: M.Type, from key: SenderKey?) -> M? {
        let (latest, afterUnlock) = withRegistry { registry -> (M?, AfterUnlock<[M]>) in
            guard let kept = registry.existingTable(for: M.self)?._latest else {
                return (nil, AfterUnlock(releasing: []))
            }
            let afterUnlock = AfterUnlock(releasing: kept.sweep())
            guard let key else { return (kept._newest, afterUnlock) }
            return (kept.newest(from: key), afterUnlock)
        }
        afterUnlock.perform()
        return latest
    }

    // MARK: Posting

    @inlinable
    func post<M: Mail>(_ mail: M) -> Receipt {
        if _deliveryOrder.isHeldByCurrentThread { return deferPost(count: 1) { $0.post(mail) } }
        return deliverInOrder(M.self, from: Never?.none, key: .none, recording: mail) {
            $0.deliver(mail, from: nil, context: $1)
        }
    }

    @inlinable
    func post<M: Mail, S: Sendable>(_ mail: M, from sender: S) -> Receipt {
        if _deliveryOrder.isHeldByCurrentThread { return deferPost(count: 1) { $0.post(mail, from: sender) } }
        switch SenderKey.unwrap(sender) {
        case .asIs: return post(unwrapped: mail, from: sender)
        case .contents(let contents): return post(opened: [mail], from: contents)
        case .absent: return post(mail)
        }
    }

    /// Posts from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrapped mail: M, from sender: S) -> Receipt {
        let key = SenderKey(sender)
        return deliverInOrder(M.self, from: sender, key: key, recording: mail) {
            $0.deliver(mail, from: sender, context: $1)
        }
    }

    @inlinable
    func post<M: Mail>(contentsOf mails: some Sequence<M>) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        if _deliveryOrder.isHeldByCurrentThread {
            return deferPost(count: mails.count) { $0.post(contentsOf: mails) }
        }
        return deliverInOrder(M.self, from: Never?.none, key: .none, recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: nil, context: $1)
        }
    }

    @inlinable
    func post<M: Mail, S: Sendable>(contentsOf mails: some Sequence<M>, from sender: S) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        if _deliveryOrder.isHeldByCurrentThread {
            return deferPost(count: mails.count) { $0.post(contentsOf: mails, from: sender) }
        }
        switch SenderKey.unwrap(sender) {
        case .asIs: return post(unwrappedContentsOf: mails, from: sender)
        case .contents(let contents): return post(opened: mails, from: contents)
        case .absent: return post(contentsOf: mails)
        }
    }

    /// Defers a post made while this thread delivers another post of this mailroom (from a
    /// filter, or from the deinit of a mail released during delivery): it runs as an ordinary
    /// post once the delivery lock is released (see ``DeliveryLock``), and its receipt counts its
    /// mail as deferred.
    @usableFromInline
    func deferPost(count: Int, _ post: @escaping @Sendable (Switchboard) -> Receipt) -> Receipt {
        _deliveryOrder.deferPost { [self] in _ = post(self) }
        return Receipt(deferred: count)
    }

    /// Posts a batch from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrappedContentsOf mails: [M], from sender: S) -> Receipt {
        deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: sender, context: $1)
        }
    }

    /// Posts mail from a sender that the post site saw only inside an existential box or an
    /// `Optional`: routes look inside, so the sender reaches exactly the subscriptions it would
    /// reach posted as its own type.
    @usableFromInline
    func post<M: Mail>(opened mails: [M], from sender: any Sendable) -> Receipt {
        deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: sender, context: $1)
        }
    }

    /// One post: captures its recipients and delivers to them holding the delivery lock, then,
    /// holding no lock, finishes departed senders' streams and releases what the post let go of
    /// (the snapshot, which may hold the last reference to a subscription, and replaced kept mail).
    ///
    /// With instrumentation, the post goes the same way in ``deliverInOrder(_:from:key:recording:mails:reportingTo:deliver:)``,
    /// kept out of line so that a post without instrumentation pays one check for it; without,
    /// `deliver` gets no context.
    @inlinable @inline(__always)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording last: M?,
        mails: Int = 1,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        if let _instrumentation {
            return deliverInOrder(
                M.self,
                from: sender,
                key: key,
                recording: last,
                mails: mails,
                reportingTo: _instrumentation,
                deliver: deliver
            )
        }
        let (receipt, recipients, afterUnlock) = inDeliveryOrder {
            let (recipients, afterUnlock) = capture(M.self, from: sender, key: key, recording: last)
            return (deliver(recipients, nil), recipients, afterUnlock)
        }
        afterUnlock.perform()
        _ = recipients  // the snapshot may hold the last reference to a subscription: released here
        _deliveryOrder.runDeferred()  // posts this post's filters made, now that the lock is free
        return receipt
    }

    /// One post under instrumentation: the poster's context is captured before the lock and
    /// handed to `deliver`, and the receipt is reported after the lock.
    @inlinable @inline(never)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording last: M?,
        mails: Int,
        reportingTo instrumentation: any MailroomInstrumentation,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        let context = instrumentation.currentContext()
        let (receipt, recipients, afterUnlock) = inDeliveryOrder {
            let (recipients, afterUnlock) = capture(M.self, from: sender, key: key, recording: last)
            return (deliver(recipients, context), recipients, afterUnlock)
        }
        afterUnlock.perform()
        _ = recipients
        instrumentation.didPost(M.self, mails: mails, receipt: receipt)
        _deliveryOrder.runDeferred()
        return receipt
    }

    /// Captures who a post must reach, after the table's housekeeping for the post.
    ///
    /// Only the capture happens under `registry`; the caller yields after it is released (see
    /// ``Recipients`` for why), and performs the ``AfterUnlock`` once it holds no lock at all.
    @inlinable
    func capture<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording mail: M?
    ) -> (Recipients<M, S>, AfterUnlock<LatestMail<M>.Displaced?>) {
        withRegistry { registry in
            guard let table = registry.recentTable(for: M.self) else {
                var recipients = Recipients<M, S>()
                if registry._taps.count > 0 { recipients._taps = registry._taps._entries }
                return (recipients, AfterUnlock(releasing: nil))
            }
            let afterUnlock = table.housekeep(afterPosting: mail, key: key)
            if table.isUnused { registry.dropTable(ObjectIdentifier(M.self)) }
            var recipients = table.recipients(from: sender, key: key)
            if registry._taps.count > 0 { recipients._taps = registry._taps._entries }
            return (recipients, afterUnlock)
        }
    }

    // MARK: Counting and closing

    /// Which subscriptions ``subscriberCount(for:counting:)`` counts.
    @usableFromInline
    enum Counted {
        /// Every subscription to the type, whatever it hears.
        case all
        /// Those that hear exactly this sender (nil: every sender; see ``Senders/key``).
        case hearing(SenderKey?)
    }

    @usableFromInline
    func subscriberCount<M: Mail>(for type: M.Type, counting counted: Counted) -> Int {
        let (count, afterUnlock) = withRegistry { registry -> (Int, AfterUnlock<[M]>) in
            guard let table = registry.existingTable(for: M.self) else { return (0, AfterUnlock(releasing: [])) }
            let afterUnlock = AfterUnlock(
                finishing: table.sweepDepartedSenders(),
                releasing: table._latest?.sweep() ?? []
            )
            if table.isUnused { registry.dropTable(ObjectIdentifier(M.self)) }
            switch counted {
            case .all: return (table._count, afterUnlock)
            case .hearing(let key): return (table.count(hearing: key), afterUnlock)
            }
        }
        afterUnlock.perform()
        return count
    }

    /// Ends every stream and refuses new ones; safe to call more than once.
    ///
    /// The route tables leave the registry under the lock and are released after it: they hold
    /// kept mail and filters, whose deinits are user code.
    @usableFromInline
    func close() {
        let (afterUnlock, actions) = withRegistry { registry -> (AfterUnlock<Discarded>, [@Sendable () -> Void]) in
            registry._isClosed = true
            registry._recent = nil
            defer {
                registry._tables = [:]
                registry._closeActions = [:]
            }
            let afterUnlock = AfterUnlock(
                finishing: registry._tables.values.flatMap { $0.removeAll() } + registry._taps.removeAll(),
                releasing: Discarded(Array(registry._tables.values))
            )
            return (afterUnlock, Array(registry._closeActions.values))
        }
        afterUnlock.perform()
        for action in actions { action() }
    }

    // MARK: Close actions

    /// Registers `action` to run once after `close()`; nil (and not run) when already closed.
    func addCloseAction(_ action: @escaping @Sendable () -> Void) -> Int? {
        withRegistry { registry in
            guard !registry._isClosed else { return nil }
            registry._nextCloseAction += 1
            registry._closeActions[registry._nextCloseAction] = action
            return registry._nextCloseAction
        }
    }

    /// Forgets a close action that has not run; released after unlocking, as it may hold user values.
    func removeCloseAction(_ key: Int) {
        let removed = withRegistry { AfterUnlock(releasing: $0._closeActions.removeValue(forKey: key)) }
        removed.perform()
    }
}
