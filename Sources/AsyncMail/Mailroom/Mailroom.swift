import Synchronization

/// Hands out typed subscriptions to mail and delivers every post to the ones that match.
///
/// ```swift
/// struct Ping: Mail { let id: Int }
///
/// let mailroom = Mailroom()
/// let pings = await mailroom.subscribe(to: Ping.self)   // live from here on
/// await mailroom.post(Ping(id: 1))
/// for await ping in pings { print(ping.id) }          // 1
/// ```
///
/// Guarantees:
/// - **Live on return.** When `subscribe` returns, the subscription is registered: nothing
///   posted afterwards can be missed, even before the stream is iterated.
/// - **One order where it can be seen.** Any two subscriptions receive the posts they both hear
///   in one order: the subscriptions to one sender (a *room*) see its posts in one order, and
///   while a subscription of the type hears several rooms (``Senders/everyone``, `fromAny:`), all
///   of the type's subscriptions see its posts in one order. Each poster's mail arrives in the
///   order it was posted.
/// - **No shared lock where no order is owed.** Posts of different types, and posts to
///   different rooms of a type that no subscription hears all of, never wait for each other:
///   a slow `where:` filter delays only the posts its own subscribers could see.
/// - **No hops.** Every method runs on the caller's executor and never suspends
///   (`nonisolated(nonsending)`), so a main-actor caller pays no thread switch per post. The
///   `await` at each call site is part of the actor's shape, not a wait.
/// - **No tokens.** Cancelling the task that iterates a stream, breaking out of its loop and
///   dropping it, or dropping a stream that was never iterated removes the subscription
///   before the loop ends: ``subscriberCount(_:from:)`` never counts it afterwards.
/// - **No blocking.** A post never waits for a consumer; a slow consumer only fills its own
///   buffer. The ``Receipt`` says what bounded buffers dropped.
// `final` changes nothing for users (actors cannot be subclassed) but lets a client's
// optimiser call the `@inlinable` methods directly and specialise them for its mail types;
// without it they are dispatched through the vtable and run unspecialised.
public final actor Mailroom {
    /// A process-wide mailroom for code that has no better place to keep one.
    ///
    /// Prefer a mailroom per component (and per test) where you can; anyone can
    /// ``close()`` the shared one. In a test with AsyncMailTesting's `.isolatedSharedMailroom`
    /// trait, this is that test's own mailroom instead, in the test and in every task it starts
    /// (a detached task excepted), so parallel tests never hear each other's mail. Reading it
    /// costs one atomic load while no such test runs, and a task-local look-up while one does.
    public static var shared: Mailroom {
        // Outside every test scope (always, in production) one atomic load, not a task-local look-up.
        guard scopedSharedCount.load(ordering: .acquiring) > 0 else { return processWide }
        return _scopedShared ?? processWide
    }

    /// The mailroom ``shared`` is outside any test scope.
    private static let processWide = Mailroom()

    /// Every live subscription; a lock rather than actor state so that a stream's
    /// termination handler can remove it synchronously (see ``Switchboard``).
    @usableFromInline let _switchboard: Switchboard

    /// Creates an empty, open mailroom.
    ///
    /// When the mailroom is deallocated, every stream it handed out finishes.
    public init() {
        _switchboard = Switchboard()
    }

    /// Creates an empty, open mailroom that reports to `instrumentation` and carries the context
    /// each mail is posted in to the code that handles it.
    ///
    /// With AsyncMailObservability's instrumentation, posts and subscriptions become swift-metrics
    /// metrics, and each mail's `ServiceContext` reaches `observe` handlers, `serve`'s deliveries
    /// and ``BoundedStream/withContexts``:
    ///
    /// ```swift
    /// let mailroom = Mailroom(instrumentation: MailroomObservability())
    /// ```
    ///
    /// A mailroom made with `nil` is the same as one made with ``init()``.
    public init(instrumentation: (any MailroomInstrumentation)?) {
        _switchboard = Switchboard(instrumentation: instrumentation)
    }

    /// A mailroom on a given switchboard; see `Mailroom+Testing.swift`.
    init(switchboard: Switchboard) {
        _switchboard = switchboard
    }

    // MARK: Subscribing

    /// Subscribes to mail of a type: from every sender, or from one (``Senders``).
    ///
    /// The subscription is live when this returns: nothing posted afterwards can be missed. It
    /// ends when the stream finishes (``close()``, or its pinned object sender is gone), when the
    /// task iterating it is cancelled, or when the stream is dropped.
    ///
    /// ```swift
    /// let orders = await mailroom.subscribe(to: OrderPlaced.self)
    /// let lobby = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")))
    /// let large = await mailroom.subscribe(to: OrderPlaced.self, where: { $0.total > 10_000 })
    /// ```
    ///
    /// - Parameters:
    ///   - type: The mail type to receive.
    ///   - senders: Whose mail: ``Senders/everyone`` (the default, which includes mail posted
    ///     with no sender) or `.only(_:)`, one object by identity or
    ///     one `Hashable` value by equality. An object sender is held weakly; once it has been
    ///     deallocated the stream finishes at the next ``subscriberCount(_:from:)`` of this mail type,
    ///     and posts of this type find it too: they check the pinned objects round-robin, one per
    ///     post on average, so with `n` objects pinned to this type it finishes within `n` posts
    ///     when `n <= 64` and within `n + 63` otherwise, which keeps a post's cost O(1).
    ///   - bufferingPolicy: How much mail to hold while the consumer is busy. The default,
    ///     `.unbounded`, never drops. With `.bufferingOldest(n)` or `.bufferingNewest(n)` a
    ///     slow consumer loses mail and each post's ``Receipt`` reports it. A limit of zero
    ///     or less holds nothing: mail reaches the consumer only if it is already waiting. To end
    ///     a consumer that falls behind instead, use
    ///     ``subscribe(to:from:backlog:startingWithLatest:where:)``.
    ///   - startingWithLatest: When the type keeps its latest mail (``retainLatest(_:)``), start
    ///     the stream with it, ahead of anything posted later: the type's newest mail for
    ///     ``Senders/everyone``, the newest from that sender otherwise. Without a kept mail, the
    ///     stream starts empty.
    ///   - isIncluded: A filter run when mail is posted, before it is buffered. Mail it rejects
    ///     never takes a buffer slot and counts in neither column of the ``Receipt``. It runs
    ///     once per matching post, on the poster's thread, so keep it cheap and free of side
    ///     effects. It never runs under the mailroom's registry lock, so it may drop or cancel
    ///     streams; but it runs while its post holds the lanes that order it, so while it runs,
    ///     the posts that share a subscriber with this one wait (posts to other rooms and types
    ///     do not), and it must not block waiting for another post to this mailroom. A
    ///     ``postSynchronously(_:)`` it makes is deferred until its post is done (see ``Receipt``).
    @inlinable
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> AsyncStream<M> {
        subscription(
            to: M.self,
            from: senders,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )._stream
    }

    /// Subscribes to mail posted by any sender that is an `S`, handed over with its sender.
    ///
    /// A sender matches when it *is* an `S`, as `sender is S` would say of its value at run time:
    /// a value of type `S`, an instance of a subclass when `S` is a class, any sender conforming
    /// to `S` when `S` is a protocol type such as `(any Named).self`. How the post site spells
    /// the sender changes nothing: mail posted `from: player`, from a variable of type
    /// `any AnyObject & Sendable` holding it, or `from: Optional(player)` reaches the same
    /// subscriptions. Mail posted from `nil` has no
    /// sender and matches no sender type. Matching costs a dynamic cast per sender type the first
    /// time a sender's own type is posted, then a look-up; posts of mail types without sender-type
    /// subscriptions pay nothing for them.
    ///
    /// ```swift
    /// for await envelope in await mailroom.subscribe(to: Moved.self, fromAny: Player.self) {
    ///     print(envelope.sender.name, envelope.mail.square)
    /// }
    /// ```
    ///
    /// `bufferingPolicy` and `where` work as in ``subscribe(to:from:bufferingPolicy:startingWithLatest:where:)``.
    /// With `startingWithLatest`, the stream starts with the newest mail kept from an object or
    /// `Hashable` sender that is an `S`: the mailroom keeps mail per sender only for those.
    @inlinable
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        bufferingPolicy: AsyncStream<Envelope<M, S>>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> AsyncStream<Envelope<M, S>> {
        subscription(
            to: M.self,
            fromAny: S.self,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )._stream
    }

    /// Taps every post of every mail type, for logging, auditing and debugging tools.
    ///
    /// Each post arrives as a type-erased ``PostedMail`` (the mail, its type and its sender),
    /// whole: a batch's mails together, the last marked ``PostedMail/isLastInPost``. Every tap of
    /// the mailroom hears posts in one order, which agrees with what subscribers see (a room's
    /// posts in the room's order, a type heard in several rooms in the type's order). Taps
    /// observe without taking part: they are not
    /// counted in receipts or in ``subscriberCount(_:from:)``. While nobody taps, a post pays a
    /// single check for it. Like every subscription, a tap is live on return and ends when its
    /// consuming task is cancelled, its stream is dropped, or the mailroom closes. For a tap that
    /// feeds something that can stall, such as a log shipper, use
    /// ``tap(backlog:where:)``.
    ///
    /// ```swift
    /// for await posted in await mailroom.tap() {
    ///     logger.debug("\(posted.typeName) from \(String(describing: posted.sender))")
    /// }
    /// ```
    public nonisolated(nonsending) func tap(
        bufferingPolicy: AsyncStream<PostedMail>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> AsyncStream<PostedMail> {
        _switchboard.subscribe(Filing<NoMail, PostedMail>(.tap, bufferingPolicy: bufferingPolicy, accepts: isIncluded))
            ._stream
    }

    // MARK: Keeping the latest mail

    /// Keeps the latest mail of a type, for state-like mail such as "configuration changed".
    ///
    /// From now on the mailroom keeps the newest mail of this type, and the newest from each
    /// sender, for ``latest(_:from:)`` and for subscriptions and observations
    /// made with `startingWithLatest: true`. Calling it again does nothing.
    ///
    /// Memory: one mail for the type, plus one per sender that posted it. The type's newest mail
    /// is kept whoever posted it, even an object that is gone since: it is the current value. The
    /// copy kept *for* an object sender is dropped once that sender is gone (checked whenever the
    /// number of object senders with kept mail, latest or history, doubles, and on every
    /// ``latest(_:from:)`` or ``subscriberCount(_:from:)``). Mail from a value sender, such as a room id, stays until
    /// ``close()``: keep the set of values bounded.
    ///
    /// ```swift
    /// await mailroom.retainLatest(Settings.self)
    /// await mailroom.post(Settings(theme: .dark))
    /// let settings = await mailroom.subscribe(to: Settings.self, startingWithLatest: true)
    /// // the first element is Settings(theme: .dark), then every later change
    /// ```
    public nonisolated(nonsending) func retainLatest<M: Mail>(_ type: M.Type) async {
        _switchboard.retainLatest(M.self)
    }

    /// The newest mail of a type, if the type keeps its latest mail (``retainLatest(_:)``).
    ///
    /// From ``Senders/everyone`` (the default) it is the type's current value, whoever posted it:
    /// it stays after an object that posted it is gone. From `.only(_:)`
    /// it is the newest mail that sender posted.
    ///
    /// ```swift
    /// let settings = await mailroom.latest(Settings.self)
    /// let lastLine = await mailroom.latest(ChatLine.self, from: .only(RoomID("lobby")))
    /// ```
    public nonisolated(nonsending) func latest<M: Mail>(_ type: M.Type, from senders: Senders = .everyone) async -> M? {
        _switchboard.latest(M.self, from: senders.key)
    }

    /// The newest mail of a type posted by any sender of `senderType`, with that sender, if the
    /// type keeps its latest mail (``retainLatest(_:)``): what a replaying
    /// `subscribe(to:fromAny:startingWithLatest:)` would start with.
    ///
    /// Each sender's newest mail is kept; this is the newest of those whose sender is a
    /// `senderType` (a supertype or protocol counts, as for `fromAny:`), so it walks every kept
    /// sender, under the type's lock. A departed object's mail no longer counts.
    ///
    /// ```swift
    /// let lastScore = await mailroom.latest(Score.self, fromAny: Player.self)
    /// ```
    public nonisolated(nonsending) func latest<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type
    ) async -> Envelope<M, S>? {
        _switchboard.latest(M.self, fromAny: S.self)
    }

    // MARK: Posting

    /// Posts mail with no sender; it reaches only subscriptions without a sender filter.
    ///
    /// Delivery happens before this returns: the mail is handed to a waiting consumer or
    /// buffered for it. It never waits for a consumer, and never suspends: it runs on the
    /// caller's executor. Like a loop of `continuation.yield`, a loop that does nothing but
    /// post keeps its thread; for bulk mail use ``post(contentsOf:)``, or `await Task.yield()`
    /// now and then so other tasks (your consumers among them) get to run.
    ///
    /// The one wait: while a relay (AsyncMailSQLite, AsyncMailPostgres) runs with its outbound
    /// queue full, a post of a type it relays first waits for room there, as the relay's
    /// `backpressure` setting says, before it is made (every `post` form does;
    /// ``postSynchronously(_:)`` never waits).
    ///
    /// - Returns: How many subscriptions received the mail and how many lost one to a full buffer.
    @discardableResult
    @inlinable
    public nonisolated(nonsending) func post<M: Mail>(_ mail: M) async -> Receipt {
        await _admitted(M.self, from: nil) { self._switchboard.post(mail) }
    }

    /// Posts mail from an object or actor, matched by identity.
    ///
    /// It reaches subscriptions from ``Senders/everyone``, subscriptions pinned to this object
    /// with `.only(_:)`, and subscriptions from any sender type it is
    /// (``subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``). A `nil` sender is no
    /// sender: the mail reaches only subscriptions from ``Senders/everyone``. A sender *type* is
    /// not a sender: `post(score, from: Player.self)` does not compile.
    ///
    /// ```swift
    /// await mailroom.post(Joined(name: "ada"), from: lobby)
    /// ```
    ///
    /// - Returns: How many subscriptions received the mail and how many lost one to a full buffer.
    @discardableResult
    @inlinable
    public nonisolated(nonsending) func post<M: Mail>(
        _ mail: M,
        from sender: (some AnyObject & Sendable)?
    ) async -> Receipt {
        await _admitted(M.self, from: sender) { self._switchboard.post(mail, fromObject: sender) }
    }

    /// Posts mail from a `Hashable` sender value, such as a room id, matched by type and equality.
    ///
    /// Routed like the form for objects. The sender is classified by its value, never by the static
    /// type at this call site: an object that reaches here as a `Hashable` still matches by
    /// identity, and an `Optional` is looked through (`nil` is no sender).
    ///
    /// ```swift
    /// await mailroom.post(ChatLine(text: "hi"), from: RoomID("lobby"))
    /// ```
    ///
    /// - Returns: How many subscriptions received the mail and how many lost one to a full buffer.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(_ mail: M, from sender: some Hashable & Sendable) async -> Receipt
    {
        await _admitted(M.self, from: sender) { self._switchboard.post(mail, fromValue: sender) }
    }

    /// Posts a batch of mail with no sender, in order, as one delivery.
    ///
    /// Equivalent to posting each mail in turn, with nothing from other posters in between,
    /// but cheaper: the lanes and the lookup of subscriptions are taken once for the
    /// whole batch (the measured gain is in `Benchmarks/README.md`). Subscriptions can take
    /// the whole batch one after another, so the filters of different subscriptions may run
    /// in another order than they would for single posts; each filter sees the batch in order.
    ///
    /// ```swift
    /// await mailroom.post(contentsOf: lines.map(ChatLine.init))
    /// ```
    ///
    /// - Returns: The receipts of every mail in the batch, added up.
    @discardableResult
    @inlinable
    public nonisolated(nonsending) func post<M: Mail>(contentsOf mails: some Sequence<M> & Sendable) async -> Receipt {
        await _admitted(M.self, from: nil) { self._switchboard.post(contentsOf: mails) }
    }

    /// Posts a batch of mail from one object or actor, in order, as one delivery.
    ///
    /// Routed exactly like ``post(_:from:)`` for every mail in the batch.
    ///
    /// - Returns: The receipts of every mail in the batch, added up.
    @discardableResult
    @inlinable
    public nonisolated(nonsending) func post<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: (some AnyObject & Sendable)?
    ) async -> Receipt {
        await _admitted(M.self, from: sender) { self._switchboard.post(contentsOf: mails, fromObject: sender) }
    }

    /// Posts a batch of mail from one `Hashable` sender value, in order, as one delivery.
    ///
    /// Routed exactly like ``post(_:from:)`` for every mail in the batch.
    ///
    /// - Returns: The receipts of every mail in the batch, added up.
    @discardableResult
    @inlinable @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: some Hashable & Sendable
    ) async -> Receipt {
        await _admitted(M.self, from: sender) { self._switchboard.post(contentsOf: mails, from: sender) }
    }

    // MARK: Inspecting and closing

    /// The number of live subscriptions to a mail type: all of them, or those that would hear a
    /// post from one sender.
    ///
    /// With ``Senders/everyone``, the default, every subscription to the type is counted, whatever
    /// it hears (pinned, sender-type and every-sender subscriptions alike). With `.only(sender)`,
    /// a subscription is counted if a post from `sender` would reach it: those pinned to that
    /// sender (its room), those that hear every sender (`.everyone`), and those that hear every
    /// sender of one of its types (`fromAny:`). Whatever else narrows a subscription (a `where:`
    /// filter, a position, a backlog limit) does not change whether it counts. This is the demand
    /// rule of ``subscriberCounts(_:from:)`` and ``whileSubscribed(to:from:stopAfter:run:)``; the
    /// *Server Patterns* article has it as a table. Taps are never counted.
    ///
    /// Exact at the moment it is read: a subscription whose consumer has left its loop is never
    /// counted, and this call first ends subscriptions whose pinned object sender is gone. Like
    /// every entry point, it runs on the caller's executor and never suspends.
    ///
    /// ```swift
    /// let everyone = await mailroom.subscriberCount(ChatLine.self)
    /// let hearingLobby = await mailroom.subscriberCount(ChatLine.self, from: .only(RoomID("lobby")))
    /// ```
    public nonisolated(nonsending) func subscriberCount<M: Mail>(
        _ type: M.Type,
        from senders: Senders = .everyone
    ) async -> Int {
        _switchboard.subscriberCount(M.self, counting: senders.key.map { .reaching($0) } ?? .all)
    }

    /// The number of live subscriptions to a mail type that hear every sender of `senderType`,
    /// made with `subscribe(to:fromAny:)` or `observe(_:fromAny:owner:)` for exactly that type.
    ///
    /// Exact under the same rules as ``subscriberCount(_:from:)``. Only `fromAny:` subscriptions
    /// are counted here, not `.everyone` ones (a sender type is not a room). A subscription to a
    /// supertype or protocol of `senderType` is counted under its own type, not this one.
    ///
    /// ```swift
    /// let watchingPlayers = await mailroom.subscriberCount(Score.self, fromAny: Player.self)
    /// ```
    public nonisolated(nonsending) func subscriberCount<M: Mail, S: Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type
    ) async -> Int {
        _switchboard.subscriberCount(M.self, counting: .senderType(ObjectIdentifier(S.self)))
    }

    /// Finishes every stream and shuts the mailroom.
    ///
    /// Consumers' loops end normally after draining what is already buffered. Afterwards
    /// `subscribe` returns an already-finished stream and `post` returns
    /// `Receipt(delivered: 0, dropped: 0)`. Calling it again does nothing. Like every entry
    /// point, it runs on the caller's executor and never suspends.
    public nonisolated(nonsending) func close() async {
        _switchboard.close()
    }
}
