/// What one try at work that must hold the lanes it found came to.
///
/// The lane protocol, which every post that records its mail or keeps history and every
/// subscribe that replays or resumes goes through: look under a shard's lock for the lanes to
/// hold, take them, look again under the shard's lock holding them, and act if they are still the
/// same lanes; otherwise let go and look again (``Switchboard/retrying(_:)``). The second look is
/// what orders the work against every post that shares a lane with it.
@usableFromInline
enum LaneAttempt<Value> {
    /// Done, holding the lanes it looked up.
    case done(Value)
    /// The lanes changed between the two looks (a first subscription to the room, or the room's
    /// last gone; a subscription hearing several rooms came or went; a first tap, or the last):
    /// look again.
    case stale
    /// The table was retired (its mailroom closed): nothing more happens here.
    case retired
}

extension LaneAttempt: Sendable where Value: Sendable {}
