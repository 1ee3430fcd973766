import Synchronization

/// The subscription registry of one ``Mailroom``: the route table of each mail type, the taps,
/// and whether the mailroom is closed.
///
/// Locks, and why they are locks and not actor state. AsyncStream runs a termination handler
/// synchronously, on whatever thread cancels or drops the stream, and *before* the consumer's
/// loop sees the end. Removing the subscription right there is what makes removal
/// deterministic: once a consumer's loop has exited, no count includes it, with no actor hop,
/// polling or later cleanup pass.
///
/// A post takes no lock of the mailroom's or of its type's: it finds its type's ``RouteTable``
/// in `tables`, a ``TypeMap`` read with no lock, and takes only its room's shard lock there to
/// capture its recipients; then its ``Lanes``, held while it yields, which order it against the
/// posts that share a subscriber with it and against nothing else. While someone taps, it also
/// reads the taps' list and yields to the taps, holding their lane (every tap hears every post).
///
/// `registry` is taken to make a type's table, to add or remove a tap or a close action, and to
/// close, never by a post, and before a table's locks. It and the tables' locks are leaves held for a look-up, a capture or a
/// change: nothing that enters the concurrency runtime or runs user code happens while one is
/// held. Task cancellation runs termination handlers (which take them) while holding the
/// cancelled task's runtime lock, and yielding needs that same task lock, so yielding under one
/// could deadlock. Lanes are held across yields and filters, and no termination handler takes
/// one, so that forms no cycle.
@usableFromInline
final class Switchboard: Sendable {
    @usableFromInline
    struct Registry {
        /// Set by `close()`: from then on nothing is registered and nothing is delivered.
        @usableFromInline var _isClosed = false
        /// What ``Mailroom/onClose(_:)`` registered, to run once after `close()`.
        @usableFromInline var _closeActions: [Int: @Sendable () -> Void] = [:]
        /// The key the next close action gets.
        @usableFromInline var _nextCloseAction = 0

        @usableFromInline init() {}
    }

    @usableFromInline let _registry = Locked(Registry())

    /// The route table of each mail type that has had one, by the type's identity: found by a
    /// post with no lock, and kept until this switchboard goes (see ``TypeMap``). A table is made
    /// under `registry`, so that none is made after `close()` retired them all.
    @usableFromInline let _tables = TypeMap()

    /// Taps on every post, whatever its type: their list is under `registry`.
    @usableFromInline let _taps = SubscriberList<PostedMail>()
    /// What a post reads of the taps, holding their lane (see ``Taps``).
    @usableFromInline let _tapped = Taps()
    /// Whether someone taps: a post with nobody tapping reads this one word for the taps.
    @usableFromInline let _tapping = Atomic<Bool>(false)

    /// Hands posts the taps' list after a tap came or went; call holding `registry`.
    @usableFromInline
    func tapsChanged() {
        let entries = _taps._entries
        _tapped._current.withLock { $0 = entries }
        _tapping.store(!entries.isEmpty, ordering: .releasing)
    }

    /// The taps a post yields to, if anyone taps; the post reads their list holding their lane.
    @inlinable @inline(__always)
    var taps: Taps? {
        _tapping.load(ordering: .acquiring) ? _tapped : nil
    }

    /// `table` as the table of `M`, without a dynamic cast.
    ///
    /// The one place a table's type is taken on trust. It is safe because a table is only ever
    /// filed under the identity of its own mail type: ``openTable(for:)`` files a
    /// `RouteTable<M>` under `ObjectIdentifier(M.self)`, and every caller passes the `M` whose
    /// identity it looks up.
    @inlinable @inline(__always)
    func withTable<M: Mail, Result>(
        of type: M.Type,
        absent: @autoclosure () -> Result,
        _ body: (RouteTable<M>) -> Result
    ) -> Result {
        _tables.withObject(for: ObjectIdentifier(M.self), as: RouteTable<M>.self, absent: absent(), body)
    }

    /// The table of `M`, if it has one.
    @inlinable
    func existingTable<M: Mail>(for type: M.Type) -> RouteTable<M>? {
        _tables.object(for: ObjectIdentifier(M.self), as: RouteTable<M>.self)
    }

    /// Posts made from inside a delivery of this mailroom, waiting for it to end.
    @usableFromInline let _deferred = DeferredPosts()

    /// Which types keep history, and the mailroom's epoch (see ``Histories``).
    @usableFromInline let _histories = Histories()
    /// The watchers of subscriber counts; one atomic load per subscription change while none.
    @usableFromInline let _demand = Demand()
    /// What may make an asynchronous post wait first; one atomic load per post while none.
    @usableFromInline let _admissions = PostAdmissions()

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
        if let table = existingTable(for: M.self) { return table.isRetired ? nil : table }
        return withRegistry { registry in
            registry._isClosed
                ? nil : _tables.object(for: ObjectIdentifier(M.self), as: RouteTable<M>.self) { RouteTable<M>() }
        }
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
