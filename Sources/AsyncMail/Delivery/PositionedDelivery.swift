/// Yields one mail, in a positioned envelope with its sender, to a snapshot of `fromAny:`
/// subscriptions with positions.
@usableFromInline
struct PositionedDelivery<M: Mail>: Sendable {
    @usableFromInline let _deliver: @Sendable (M, MailPosition, PostContext?, inout Receipt) -> Void
}
