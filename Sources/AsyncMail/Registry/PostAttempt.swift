/// One try of the lane protocol, as a value: it takes what each look found and says what to do
/// next. Posts that record their latest mail or keep history (``Switchboard/inPostLanes(of:from:key:firstLook:beforeLanes:secondLook:deliver:)``)
/// and subscribes that file in one room's lane (``Switchboard/inRoomLane(of:at:pinning:andThen:_:)``)
/// drive it; it holds no lock and does nothing itself, so its transitions are tested without
/// threads (`PostAttemptTests`).
///
/// ```
/// looking ──looked──▶ laned ──tookLanes──▶ confirming ──lookedAgain──▶ confirmed (deliver)
///    │                  │                     │
///    └─▶ retired        └─▶ stale (retry)     ├─▶ stale (retry)
///                                             └─▶ retired
/// ```
///
/// A room found that is not the sender's (see ``RoomCheck``) is dropped from the first look's
/// lanes, and stays dropped when the second look finds it again.
@usableFromInline
struct PostAttempt {
    /// Where the attempt is. The lanes live beside it, not in it, so that moving from one phase
    /// to the next copies no reference.
    @usableFromInline
    enum Phase {
        case looking
        /// The lanes to take are known.
        case laned
        /// The lanes are held; the second look decides.
        case confirming
        case confirmed
        case stale
        case retired
    }

    /// What the driver does next.
    @usableFromInline
    enum Action: Equatable {
        /// Take ``lanes``, type first, then ``tapsLane`` if there is one.
        case takeLanes
        /// Holding the lanes, look again under the shard's lock.
        case lookAgain
        /// The lanes are still the post's: act and deliver, with the room's recipients dropped
        /// when `dropRoom` (the room found is not the sender's).
        case deliver(dropRoom: Bool)
        /// Let go of the lanes and look again from the start.
        case retry
        /// The table is retired (its mailroom closed): nothing to deliver.
        case returnEmpty
    }

    @usableFromInline var _phase = Phase.looking
    /// The lanes to take: the first look's, less a room that is not the sender's.
    @usableFromInline var lanes = Lanes()
    /// The room the first look found that is not the sender's; held, so that no other room can
    /// take its place in memory and pass for it at the second look.
    @usableFromInline var _droppedRoom: Lane?
    /// The taps' lane, when someone tapped at the first look.
    @usableFromInline var tapsLane: Lane?

    @inlinable
    init() {}

    /// The first look, under the room's shard lock: the lanes it found (nil when the table is
    /// retired), whether the room found is the sender's, and the taps' lane if someone taps.
    @inlinable
    mutating func looked(_ found: Lanes?, roomIsTheSenders: Bool, tapsLane: Lane?) -> Action {
        precondition(_phase == .looking, "looked twice")
        guard let found else {
            _phase = .retired
            return .returnEmpty
        }
        if roomIsTheSenders {
            lanes = found
        } else {
            lanes = found.withoutRoom
            _droppedRoom = found._room
        }
        self.tapsLane = tapsLane
        _phase = .laned
        return .takeLanes
    }

    /// The lanes are held: `tapped` says whether someone taps now. A first tap or the last gone
    /// since the first look changes the lanes a post holds.
    @inlinable
    mutating func tookLanes(tapped: Bool) -> Action {
        precondition(_phase == .laned, "not laned")
        guard tapped == (tapsLane != nil) else {
            _phase = .stale
            return .retry
        }
        _phase = .confirming
        return .lookAgain
    }

    /// The second look, under the shard's lock and holding the lanes: the lanes it found (nil
    /// when the table is retired).
    @inlinable
    mutating func lookedAgain(_ now: Lanes?) -> Action {
        precondition(_phase == .confirming, "not confirming")
        guard let now else {
            _phase = .retired
            return .returnEmpty
        }
        let dropRoom = _droppedRoom != nil && now._room === _droppedRoom
        guard (dropRoom ? now.withoutRoom : now).holdsTheSameLanes(as: lanes) else {
            _phase = .stale
            return .retry
        }
        _phase = .confirmed
        return .deliver(dropRoom: dropRoom)
    }

    /// What the second look's own work found: the lanes are the post's, but it must look again
    /// (a history post whose room's history went meanwhile).
    @inlinable
    mutating func workWentStale() {
        precondition(_phase == .confirmed, "not confirmed")
        _phase = .stale
    }
}
