/// Yields one mail, in an envelope with its sender, to a snapshot of envelope subscriptions whose
/// sender type the post site did not know statically; or tells them a loss (``Delivery/lost(_:)``).
/// One closure for both: a second would cost its post an allocation.
@usableFromInline
struct EnvelopeDelivery<M: Mail>: Sendable {
    @usableFromInline let _deliver: @Sendable (Delivery<M>, PostContext?, inout Receipt) -> Void
}
