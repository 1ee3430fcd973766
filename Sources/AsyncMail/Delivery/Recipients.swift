/// The subscriptions one post must reach, captured under the lock and served after it is released.
///
/// Yielding happens outside the ``Switchboard``'s lock because resuming a consumer takes that
/// consumer task's own runtime lock, which task cancellation holds while it runs the stream's
/// termination handler (and that handler takes the switchboard's lock): yielding under the lock
/// would invert the two and deadlock. The arrays are copy-on-write snapshots, so capturing them
/// costs a retain, not an allocation; a subscription removed meanwhile answers `.terminated` and
/// counts nowhere. Posts that share a subscriber keep one order because each holds the lanes
/// that order them (see ``Lanes``) from before its first yield to after its last.
@usableFromInline
struct Recipients<M: Mail, S: Sendable>: Sendable {
    // The routes most posts do not have are optional rather than empty: an empty array is still
    // a reference, retained and released on every copy of this struct; `nil` costs nothing.

    /// Subscriptions that take every mail of the type.
    @usableFromInline var _everyone: [Subscriber<M>]?

    /// Subscriptions pinned to the post's sender.
    @usableFromInline var _pinned: [Subscriber<M>]?
    /// Subscriptions to the sender's type, or to a supertype or protocol of it, which receive
    /// envelopes. One field for both: a fifth field made every post's copy and destruction of
    /// this struct go through outlined value witnesses.
    @usableFromInline var _bySenderType: SenderTypeRecipients<M, S>?
    /// Taps on every post. They observe and are not counted: a logging tap must never make a
    /// post that no subscriber heard look delivered. A post reaches them whole (see ``Taps``).
    @usableFromInline var _taps: Taps?
    /// Set when the post already holds the taps' lane for its whole delivery (a post that keeps
    /// its type's latest mail: see `Switchboard.deliverRecording`), so it is not taken again.
    @usableFromInline var _holdsTapsLane = false

    @inlinable
    init() {}

    /// Delivers `mail` (with `sender`, for envelope subscriptions) and counts the outcome.
    ///
    /// `context` is what the mailroom's instrumentation captured for the post, `nil` without one.
    @inlinable
    func deliver(_ mail: M, from sender: S?, context: PostContext?) -> Receipt {
        let receipt = deliverToSubscribers(mail, from: sender, context: context)
        if let _taps {
            if !_holdsTapsLane { _taps._lane.lock() }
            tap(mail, from: sender, context: context, isLastInPost: true, to: _taps.subscribers)
            if !_holdsTapsLane { _taps._lane.unlock() }
        }
        return receipt
    }

    /// Delivers a batch and adds up the receipts; then hands the batch to the taps, whole,
    /// holding their lane.
    ///
    /// Each subscription takes the whole batch, in order, before the next one: each keeps the
    /// post's order, and no other post's mail comes between (the post holds its lanes
    /// throughout). One call per subscription list, not per mail, because code that is not
    /// specialised for the mail type (a relay's, which posts from generic code) looks up the
    /// types it uses once per call, and per mail those lookups cost more than the yield.
    @inlinable
    func deliver(contentsOf mails: [M], from sender: S?, context: PostContext?) -> Receipt {
        var total = Receipt()
        if let _everyone { Self.yield(contentsOf: mails, to: _everyone, context: context, into: &total) }
        if let _pinned { Self.yield(contentsOf: mails, to: _pinned, context: context, into: &total) }
        if sender != nil, _bySenderType != nil {
            for index in mails.indices {
                deliverToEnvelopeSubscribers(mails[index], from: sender, context: context, into: &total)
            }
        }
        if let _taps {
            if !_holdsTapsLane { _taps._lane.lock() }
            let subscribers = _taps.subscribers
            for index in mails.indices {
                tap(
                    mails[index],
                    from: sender,
                    context: context,
                    isLastInPost: index == mails.endIndex - 1,
                    to: subscribers
                )
            }
            if !_holdsTapsLane { _taps._lane.unlock() }
        }
        return total
    }

    @inlinable
    func deliverToSubscribers(_ mail: M, from sender: S?, context: PostContext?) -> Receipt {
        var receipt = Receipt()
        if let _everyone { Self.yield(mail, to: _everyone, context: context, into: &receipt) }
        if let _pinned { Self.yield(mail, to: _pinned, context: context, into: &receipt) }
        deliverToEnvelopeSubscribers(mail, from: sender, context: context, into: &receipt)
        return receipt
    }

    /// Delivers `mail` to the subscriptions to its sender's type, as envelopes.
    @inlinable
    func deliverToEnvelopeSubscribers(_ mail: M, from sender: S?, context: PostContext?, into receipt: inout Receipt) {
        if let sender, let _bySenderType {
            switch _bySenderType {
            case .ownType(let subscribers):
                Self.yield(Envelope(mail: mail, sender: sender), to: subscribers, context: context, into: &receipt)
            case .withCasts(let recipients):
                if let subscribers = recipients._ownType {
                    Self.yield(Envelope(mail: mail, sender: sender), to: subscribers, context: context, into: &receipt)
                }
                for envelopes in recipients._cast { envelopes._deliver(.mail(mail), context, &receipt) }
            }
        }
    }

    /// Tells every subscription this post reaches that drops and tells (see ``DropBuffer``) that
    /// mail was lost before this post's: a hole in a relay's numbers for the room. Taps are not
    /// told: they hear what this mailroom delivers, not a room's numbers.
    @inlinable
    func tell(_ loss: MailLoss, from sender: S?) {
        for subscriber in _everyone ?? [] { subscriber.tell(loss) }
        for subscriber in _pinned ?? [] { subscriber.tell(loss) }
        guard sender != nil, let _bySenderType else { return }
        var uncounted = Receipt()
        switch _bySenderType {
        case .ownType(let subscribers):
            for subscriber in subscribers { subscriber.tell(loss) }
        case .withCasts(let recipients):
            for subscriber in recipients._ownType ?? [] { subscriber.tell(loss) }
            for envelopes in recipients._cast { envelopes._deliver(.lost(loss), nil, &uncounted) }
        }
    }

    /// Yields one mail of a post to the taps, uncounted; called holding their lane. Always
    /// inlined, so that a batch's loop looks its types up once (see ``deliver(contentsOf:from:context:)``).
    @inlinable @inline(__always)
    func tap(
        _ mail: M,
        from sender: S?,
        context: PostContext?,
        isLastInPost: Bool,
        to subscribers: [Subscriber<PostedMail>]
    ) {
        var uncounted = Receipt()
        let posted = PostedMail(
            mail: mail,
            mailType: M.self,
            sender: sender,
            isLastInPost: isLastInPost,
            context: context ?? .none
        )
        for subscriber in subscribers {
            Self.yield(posted, to: subscriber, context: context, into: &uncounted)
        }
    }

    @inlinable
    static func yield<Element: Sendable>(
        _ element: Element,
        to subscribers: [Subscriber<Element>],
        context: PostContext?,
        into receipt: inout Receipt
    ) {
        for subscriber in subscribers {
            yield(element, to: subscriber, context: context, into: &receipt)
        }
    }

    /// Yields every mail of a batch, in order, to each subscriber in turn.
    @inlinable
    static func yield<Element: Sendable>(
        contentsOf elements: [Element],
        to subscribers: [Subscriber<Element>],
        context: PostContext?,
        into receipt: inout Receipt
    ) {
        for subscriber in subscribers {
            for index in elements.indices {
                yield(elements[index], to: subscriber, context: context, into: &receipt)
            }
        }
    }

    /// Yields one mail to one subscriber and counts the outcome. Always inlined, so that a
    /// batch's loop looks its types up once, not once per mail.
    @inlinable @inline(__always)
    static func yield<Element: Sendable>(
        _ element: Element,
        to subscriber: Subscriber<Element>,
        context: PostContext?,
        into receipt: inout Receipt
    ) {
        // Filtered-out mail never takes a buffer slot and is not counted: it did not match.
        if let accepts = subscriber._accepts, !accepts(element) { return }
        if let dropBuffer = subscriber._dropBuffer {
            switch dropBuffer.offer(element) {
            case .enqueued: receipt.delivered += 1
            case .dropped: receipt.dropped += 1  // and told to the consumer, in order
            case .terminated: break
            }
            return
        }
        let result: AsyncStream<Element>.Continuation.YieldResult
        if let contexts = subscriber._contexts, let context {
            // The context goes in with the mail, so that a consumer never takes a mail ahead of it.
            result = contexts.offer(context) { subscriber._continuation.yield(element) }
        } else {
            result = subscriber._continuation.yield(element)
        }
        switch result {
        case .enqueued:
            receipt.delivered += 1
        case .dropped:
            if let endSignal = subscriber._endSignal {
                // Past its backlog limit: end it now, so that later mail of this post (or
                // batch) finds it terminated, and it is unregistered before the post returns.
                endSignal.end(.backlogLimitExceeded)
                subscriber._continuation.finish()
                receipt.ended += 1
            } else {
                receipt.dropped += 1
            }
        case .terminated:
            // Its consumer is already gone; the termination handler is removing it.
            break
        @unknown default:
            break
        }
    }
}

/// The envelope subscriptions one post reaches.
@usableFromInline
enum SenderTypeRecipients<M: Mail, S: Sendable>: Sendable {
    /// Only subscriptions to the sender's own (static) type: the common case, with no allocation.
    case ownType([Subscriber<Envelope<M, S>>])
    /// Subscriptions to supertypes or protocols of the sender's too, whose envelopes need a cast.
    case withCasts(CastRecipients<M, S>)
}

/// The envelope subscriptions of one post when some of them need a cast.
@usableFromInline
final class CastRecipients<M: Mail, S: Sendable>: Sendable {
    @usableFromInline let _ownType: [Subscriber<Envelope<M, S>>]?
    @usableFromInline let _cast: [EnvelopeDelivery<M>]

    @usableFromInline
    init(ownType: [Subscriber<Envelope<M, S>>]?, cast: [EnvelopeDelivery<M>]) {
        self._ownType = ownType
        self._cast = cast
    }
}
