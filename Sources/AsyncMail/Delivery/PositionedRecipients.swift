/// The subscriptions with positions one history post must reach, captured with its other
/// recipients (see `RouteTable+History.swift`) and yielded to in the same loop.
@usableFromInline
struct PositionedRecipients<M: Mail> {
    /// The room's subscriptions with positions: they see room positions.
    @usableFromInline var _room: [Subscriber<Positioned<M>>]?
    /// Subscriptions with positions to every room: they see the type's positions.
    @usableFromInline var _everyone: [Subscriber<Positioned<M>>]?
    /// `fromAny:` subscriptions with positions that hear the post's sender.
    @usableFromInline var _bySenderType: [PositionedDelivery<M>]?

    @inlinable init() {}

    /// Yields the mail at `offset` in its post, with its positions (counted on from the post's
    /// first mail's, in its room and in its type), and counts the outcome.
    @inlinable
    func deliver(
        _ mail: M,
        offset: UInt64,
        room roomPosition: MailPosition?,
        type typePosition: MailPosition?,
        context: PostContext?,
        into receipt: inout Receipt
    ) {
        if let _room, let first = roomPosition {
            let position = MailPosition(
                epoch: first.epoch,
                stream: first.stream,
                room: first.room,
                sequence: first.sequence &+ offset
            )
            Recipients<M, Never>.yield(
                Positioned(mail: mail, position: position),
                to: _room,
                context: context,
                into: &receipt
            )
        }
        guard _everyone != nil || _bySenderType != nil, let first = typePosition else { return }
        let position = MailPosition(
            epoch: first.epoch,
            stream: first.stream,
            room: first.room,
            sequence: first.sequence &+ offset
        )
        if let _everyone {
            Recipients<M, Never>.yield(
                Positioned(mail: mail, position: position),
                to: _everyone,
                context: context,
                into: &receipt
            )
        }
        for delivery in _bySenderType ?? [] { delivery._deliver(.mail(mail), position, context, &receipt) }
    }

    /// Tells every subscription with positions this post reaches that drops and tells that mail
    /// was lost before this post's (see ``Recipients/tell(_:from:)``).
    @inlinable
    func tell(_ loss: MailLoss) {
        for subscriber in _room ?? [] { subscriber.tell(loss) }
        for subscriber in _everyone ?? [] { subscriber.tell(loss) }
        var uncounted = Receipt()
        let unused = MailPosition(epoch: 0, stream: 0, room: 0, sequence: 0)
        for delivery in _bySenderType ?? [] { delivery._deliver(.lost(loss), unused, nil, &uncounted) }
    }
}
