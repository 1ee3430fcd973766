/// The locks a post holds while it yields: the one rule that decides which posts wait for each
/// other.
///
/// Two posts must keep one order for every subscriber that hears both, and nothing more. A
/// *room* is one sender (an object by identity, or a `Hashable` value): its subscriptions hear
/// only its mail, so posts to different rooms are unordered unless a subscription of the type
/// hears several rooms (one to every sender, or to a sender type). Hence:
///
/// | The type has a subscription that hears several rooms | The room has subscriptions | Lanes held |
/// | --- | --- | --- |
/// | no | no | none |
/// | no | yes | the room's |
/// | yes | no | the type's |
/// | yes | yes | the type's, then the room's |
///
/// Every post to a room that has subscriptions holds the room's lane, whatever the type, so
/// a room's subscribers share one order even while subscriptions that hear several rooms come and
/// go; every post that such a subscription hears holds the type's lane. Taps have one lane of
/// their own, held only while a post yields to them, inside its other lanes (see ``Taps`` and
/// `Architecture.md`). Lanes are always
/// taken type first, and a thread inside a delivery takes no further lane of its mailroom (see
/// ``DeferredPosts``), so no two posts can wait for each other in a cycle.
@usableFromInline
struct Lanes: Sendable {
    /// The type's lane, held when a subscription of the type hears several rooms.
    @usableFromInline let _type: Lane?
    /// The room's lane, held when the room has subscriptions.
    @usableFromInline let _room: Lane?

    /// The rule in the table above.
    ///
    /// `type` is read only when the post holds it: reading a lane is a retain, made under the
    /// table's lock.
    @inlinable
    init(type: @autoclosure () -> Lane?, room: Lane?, hearsSeveralRooms: Bool) {
        self._type = hearsSeveralRooms ? type() : nil
        self._room = room
    }

    /// No lane: a post that reaches no subscription.
    @inlinable
    init() {
        self._type = nil
        self._room = nil
    }

    /// Just `lane`: what a subscribe that replays holds, the one lane every post its subscription
    /// could hear holds (see ``Switchboard/fileReplaying(_:at:pinning:replay:)``).
    @inlinable
    init(only lane: Lane) {
        self._type = nil
        self._room = lane
    }

    /// These lanes without the room's: for a post whose room turned out not to be its sender's.
    @inlinable
    var withoutRoom: Lanes {
        Lanes(type: _type, room: nil, hearsSeveralRooms: _type != nil)
    }

    /// Runs `body` holding these lanes, the type's first.
    @inlinable @inline(__always)
    func inOrder<Result>(_ body: () -> Result) -> Result {
        _type?.lock()
        _room?.lock()
        defer {
            _room?.unlock()
            _type?.unlock()
        }
        return body()
    }

    /// Whether these are exactly the lanes `other` holds.
    @inlinable
    func holdsTheSameLanes(as other: Lanes) -> Bool {
        _type === other._type && _room === other._room
    }

    /// Whether a post holding these lanes waits for one holding `other`.
    func sharesALock(with other: Lanes) -> Bool {
        func same(_ lhs: Lane?, _ rhs: Lane?) -> Bool {
            guard let lhs, let rhs else { return false }
            return lhs === rhs
        }
        return same(_type, other._type) || same(_room, other._room)
    }
}
