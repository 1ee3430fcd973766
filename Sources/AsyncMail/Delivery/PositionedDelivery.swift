/// Yields one mail, in a positioned envelope with its sender, to a snapshot of `fromAny:`
/// subscriptions with positions; or tells them a loss (``Delivery/lost(_:)``, the position unused).
@usableFromInline
struct PositionedDelivery<M: Mail>: Sendable {
    @usableFromInline let _deliver: @Sendable (Delivery<M>, MailPosition, PostContext?, inout Receipt) -> Void
}
