/// Yields one mail, in an envelope with its sender, to a snapshot of envelope subscriptions whose
/// sender type the post site did not know statically.
@usableFromInline
struct EnvelopeDelivery<M: Mail>: Sendable {
    @usableFromInline let _deliver: @Sendable (M, PostContext?, inout Receipt) -> Void
}
