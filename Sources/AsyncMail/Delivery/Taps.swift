/// The taps of one mailroom, and the lane that keeps each post whole in every tap.
///
/// A tap hears every post, so it is a subscriber that no lane of a type or a room orders: two
/// posts to rooms that share no lane would otherwise reach a tap interleaved, the mails of a
/// batch mixed with another post's, and a tap could not tell where a post begins (the relay
/// forwards a batch as one post by its ``PostedMail/isLastInPost``). A post holds this lane while
/// it yields to the taps, and only then: it orders posts against the one subscriber that hears
/// them all, and a mailroom nobody taps never takes it.
///
/// One per mailroom. A post reads the list holding this lane, so that every tap hears a run of
/// the taps' one order with no hole: a tap filed while a post is under way hears it whole or
/// not at all, and every post after it.
@usableFromInline
final class Taps: Sendable {
    @usableFromInline let _lane = Lane()
    /// The taps now: set whenever a tap comes or goes (under the registry), read by a post
    /// holding `lane`.
    @usableFromInline let _current = Locked<[Subscriber<PostedMail>]>([])

    @inlinable init() {}

    /// The taps a post yields to; read holding `lane`.
    @inlinable var subscribers: [Subscriber<PostedMail>] { _current.withLock { $0 } }
}
