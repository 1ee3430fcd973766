/// The subscription registry of one ``Mailroom``: which mail types have a route table, the taps,
/// and whether the mailroom is closed.
///
/// Locks, and why they are locks and not actor state. AsyncStream runs a termination handler
/// synchronously, on whatever thread cancels or drops the stream, and *before* the consumer's
/// loop sees the end. Removing the subscription right there is what makes removal
/// deterministic: once a consumer's loop has exited, no count includes it, with no actor hop,
/// polling or later cleanup pass. A post takes, one after the other:
/// 1. `registry` (this type), to find its type's ``RouteTable`` and the taps;
/// 2. that table's `index`, to capture its recipients (see ``RouteTable``);
/// 3. its ``Lanes``, held while it yields, which order it against the posts that share a
///    subscriber with it and against nothing else.
///
/// `registry` and `index` are leaves held for a look-up or a capture: nothing that enters the
/// concurrency runtime or runs user code happens while either is held. Task cancellation runs
/// termination handlers (which take both) while holding the cancelled task's runtime lock, and
/// yielding needs that same task lock, so yielding under either could deadlock. Lanes are held
/// across yields and filters, and no termination handler takes one, so that forms no cycle.
@usableFromInline
final class Switchboard: Sendable {
    @usableFromInline
    struct Registry {
        /// Route tables by mail type identity; a table is dropped as soon as it is unused.
        @usableFromInline var _tables: [ObjectIdentifier: any AnyRouteTable] = [:]
        /// The table the last post looked up, so that a run of posts of one type skips hashing
        /// the type. Cleared whenever its key's table changes: see ``dropTable(_:)``.
        @usableFromInline var _recent: (key: ObjectIdentifier, table: any AnyRouteTable)?
        /// Set by `close()`: from then on nothing is registered and nothing is delivered.
        @usableFromInline var _isClosed = false
        /// What ``Mailroom/onClose(_:)`` registered, to run once after `close()`.
        @usableFromInline var _closeActions: [Int: @Sendable () -> Void] = [:]
        /// The key the next close action gets.
        @usableFromInline var _nextCloseAction = 0
        /// Taps on every post, whatever its type; empty (one check per post) unless someone taps.
        @usableFromInline let _taps = SubscriberList<PostedMail>()
        /// What a post reads of the taps: a snapshot made whenever a tap comes or goes, `nil`
        /// while nobody taps (see ``Taps``).
        @usableFromInline var _tapSnapshot: Taps?

        /// Remakes ``_tapSnapshot`` after a tap came or went.
        @usableFromInline
        mutating func tapsChanged() {
            _tapSnapshot = _taps.count > 0 ? Taps(lane: _taps._lane, subscribers: _taps._entries) : nil
        }

        @usableFromInline init() {}

        /// The table of `M` that new subscriptions file in, made if there is none yet or the one
        /// there is retired (see ``RouteTable``).
        @inlinable
        mutating func table<M: Mail>(for type: M.Type) -> RouteTable<M> {
            if let table = existingTable(for: M.self), !table.isRetired { return table }
            let key = ObjectIdentifier(M.self)
            let table = RouteTable<M>()
            _tables[key] = table
            if _recent?.key == key { _recent = nil }
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

        /// What a post reads here: `M`'s table, if it has one, and the taps, if any.
        ///
        /// Built with `ASYNCMAIL_COUNT_SHARED_LOCKS`, it is kept out of line, so that
        /// `Benchmarks/callgrind.sh` can count what a post does under a lock that every other
        /// post also takes; otherwise it is inlined.
        #if ASYNCMAIL_COUNT_SHARED_LOCKS
        @inline(never)
        #else
        @inline(__always)
        #endif
        @inlinable
        mutating func lookUp<M: Mail>(_ type: M.Type) -> (RouteTable<M>?, Taps?) {
            (recentTable(for: M.self), _tapSnapshot)
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

        /// Forgets `table`, which retired, unless a newer table has taken its place. Every
        /// removal but `close()`'s (which clears `recent` too) goes through here, so `recent`
        /// never names a dropped table.
        @inlinable
        mutating func dropTable<M: Mail>(_ table: RouteTable<M>) {
            let key = ObjectIdentifier(M.self)
            guard let filed = _tables[key], filed === table else { return }
            _tables[key] = nil
            if _recent?.key == key { _recent = nil }
        }
    }

    @usableFromInline let _registry = Locked(Registry())

    /// Posts made from inside a delivery of this mailroom, waiting for it to end.
    @usableFromInline let _deferred = DeferredPosts()

    /// The types that keep history, and the mailroom's epoch (see ``History``).
    @usableFromInline let _histories = Histories()
    /// The watchers of subscriber counts; one atomic load per subscription change while none.
    @usableFromInline let _demand = Demand()

    /// Called with whether this thread is inside a delivery, holding the subscription's lane,
    /// just before a replayed mail is yielded; lets tests prove the replay happens in order (see
    /// `Mailroom+Testing.swift`).
    @usableFromInline let _replayProbe: (@Sendable (_ laneIsHeld: Bool) -> Void)?

    /// Called with a delivery's lanes just before it takes them; lets tests prove which posts
    /// wait for which (see `Mailroom+Testing.swift`).
    @usableFromInline let _laneProbe: (@Sendable (Lanes) -> Void)?

    /// What metrics and tracing see of this mailroom; `nil` costs a check per post and per stream.
    @usableFromInline let _instrumentation: (any MailroomInstrumentation)?

    @usableFromInline
    init(
        instrumentation: (any MailroomInstrumentation)? = nil,
        replayProbe: (@Sendable (_ laneIsHeld: Bool) -> Void)? = nil,
        laneProbe: (@Sendable (Lanes) -> Void)? = nil
    ) {
        self._instrumentation = instrumentation
        self._replayProbe = replayProbe
        self._laneProbe = laneProbe
    }

    /// Runs `body` under the registry lock; the one way into `registry`.
    @inlinable
    func withRegistry<Result: Sendable>(_ body: (inout Registry) -> Result) -> Result {
        _registry.withLock(body)
    }

    /// The table of `M` to file in, made if need be; nil once the mailroom is closed.
    @inlinable
    func openTable<M: Mail>(for type: M.Type) -> RouteTable<M>? {
        withRegistry { $0._isClosed ? nil : $0.table(for: M.self) }
    }

    /// Has the registry forget `table`, which retired.
    @inlinable
    func forget<M: Mail>(_ table: RouteTable<M>) {
        withRegistry { $0.dropTable(table) }
    }

    /// Runs `body` as a delivery of this mailroom's, holding `lanes`.
    @inlinable @inline(__always)
    func inOrder<Result: Sendable>(_ lanes: Lanes, _ body: () -> Result) -> Result {
        if let _laneProbe { _laneProbe(lanes) }
        return DeliveryScope.delivering(self) { lanes.inOrder(body) }
    }

    deinit {
        // A mailroom that goes away must not leave its consumers waiting forever.
        // The termination handlers find `self` already nil, so they do nothing.
        close()
    }
}
