/// The taps one post reaches, and the lane that keeps each post whole in every tap.
///
/// A tap hears every post, so it is a subscriber that no lane of a type or a room orders: two
/// posts to rooms that share no lane would otherwise reach a tap interleaved, the mails of a
/// batch mixed with another post's, and a tap could not tell where a post begins (the relay
/// forwards a batch as one post by its ``PostedMail/isLastInPost``). A post holds this lane while
/// it yields to the taps, and only then: it orders posts against the one subscriber that hears
/// them all, as the brief's rule allows, and a mailroom nobody taps never takes it.
@usableFromInline
final class Taps: Sendable {
    @usableFromInline let _lane: Lane
    @usableFromInline let _subscribers: [Subscriber<PostedMail>]

    @inlinable
    init(lane: Lane, subscribers: [Subscriber<PostedMail>]) {
        self._lane = lane
        self._subscribers = subscribers
    }
}
