/// Everything a new subscription is filed with: where, what it buffers and accepts, how it ends,
/// and the mail it starts with. Made by the `Mailroom` methods that subscribe, taken apart once,
/// by ``Switchboard/subscribe(_:)``.
@usableFromInline
struct Filing<M: Mail, Element: Sendable> {
    /// Where it lives; a table route names `M`'s table.
    @usableFromInline let _route: Route
    /// The object an object route pins, held weakly once filed.
    @usableFromInline let _sender: AnyObject?
    @usableFromInline let _bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy
    /// The subscription's post-time filter; nil takes everything that routes here.
    @usableFromInline let _accepts: (@Sendable (Element) -> Bool)?
    /// Set for a subscription with a backlog limit (see ``EndSignal``).
    @usableFromInline let _endSignal: EndSignal?
    /// Set for a subscription that drops mail past its backlog and tells it (see ``DropBuffer``).
    @usableFromInline let _dropBuffer: DropBuffer<Element>?
    /// Whether its consumer hands each mail's context on (an observation), so the contexts of
    /// its buffered mail are kept under instrumentation (see ``PostContexts``).
    @usableFromInline let _handsOnContext: Bool
    /// Reads the mail to start with from `M`'s table, for a subscription `startingWithLatest`:
    /// given the room's shard for a subscription to one room, nil for one that hears several
    /// (which reads every shard); called holding what it reads.
    @usableFromInline let _replay: ((RouteTable<M>, RouteShard<M>?) -> Element?)?

    @inlinable
    init(
        _ route: Route,
        pinning sender: AnyObject? = nil,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        accepts: (@Sendable (Element) -> Bool)?,
        endSignal: EndSignal? = nil,
        dropBuffer: DropBuffer<Element>? = nil,
        handsOnContext: Bool = false,
        replay: ((RouteTable<M>, RouteShard<M>?) -> Element?)? = nil
    ) {
        self._route = route
        self._sender = sender
        self._bufferingPolicy = bufferingPolicy
        self._accepts = accepts
        self._endSignal = endSignal
        self._dropBuffer = dropBuffer
        self._handsOnContext = handsOnContext
        self._replay = replay
    }
}
