/// What an ``Observation``'s loop reads: the elements its handler is called with, and how to end
/// the subscription behind them.
struct ObservationFeed<Element: Sendable>: Sendable {
    /// Finishing it ends the subscription and removes it at once (``Observation/cancel()``).
    let subscription: any Finishable
    let elements: AsyncStream<Element>
    /// The contexts beside the buffered mail, when they are kept (see ``PostContexts``).
    let contexts: PostContexts?
    /// Set for an observation that ends past its backlog.
    let endSignal: EndSignal?
    /// How many accepted mails an element stands for, for ``Observation/waitUntilHandled()``: a
    /// loss stands for every mail it lost. Nil: one each.
    let weight: (@Sendable (Element) -> Int)?
    /// The subscription's own stream, when the elements come from elsewhere: dropping it would end
    /// the subscription, so the loop holds it until it ends.
    let holding: (any Sendable)?

    init(
        subscription: any Finishable,
        elements: AsyncStream<Element>,
        contexts: PostContexts? = nil,
        endSignal: EndSignal? = nil,
        weight: (@Sendable (Element) -> Int)? = nil,
        holding: (any Sendable)? = nil
    ) {
        self.subscription = subscription
        self.elements = elements
        self.contexts = contexts
        self.endSignal = endSignal
        self.weight = weight
        self.holding = holding
    }

    /// A subscription's own stream, as a plain or bounded observation reads it.
    init(_ registered: RegisteredStream<Element>, endSignal: EndSignal? = nil) {
        self.init(
            subscription: registered._continuation,
            elements: registered._stream,
            contexts: registered._contexts,
            endSignal: endSignal
        )
    }
}
