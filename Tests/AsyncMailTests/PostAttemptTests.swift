import Testing

@testable import AsyncMail

/// The lane protocol's machine, driven by the looks it is told of: no threads, no locks taken.
@Suite("One post attempt: look, take the lanes, look again, then deliver, retry or stop")
struct PostAttemptTests {
    private let type = Lane()
    private let room = Lane()
    private let otherRoom = Lane()
    private let taps = Lane()

    private var roomLanes: Lanes { Lanes(type: type, room: room, hearsSeveralRooms: true) }
    private var typeOnly: Lanes { Lanes(type: type, room: nil, hearsSeveralRooms: true) }

    /// The first look of a fresh attempt, which must say to take `lanes` (and `tapsLane`).
    private func laned(
        _ found: Lanes,
        roomIsTheSenders: Bool = true,
        tapsLane: Lane? = nil,
        taking lanes: Lanes,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> PostAttempt {
        var attempt = PostAttempt()
        let action = attempt.looked(found, roomIsTheSenders: roomIsTheSenders, tapsLane: tapsLane)
        #expect(action == .takeLanes, sourceLocation: sourceLocation)
        #expect(attempt.lanes.holdsTheSameLanes(as: lanes), sourceLocation: sourceLocation)
        #expect(attempt.tapsLane === tapsLane, sourceLocation: sourceLocation)
        return attempt
    }

    @Test("the same lanes at both looks: deliver, keeping the room")
    func sameLanesDeliver() {
        var attempt = laned(roomLanes, taking: roomLanes)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        #expect(attempt.lookedAgain(roomLanes) == .deliver(dropRoom: false))
        #expect(attempt._phase == .confirmed)
    }

    @Test("a room that is not the sender's is not taken, and stays dropped at the second look")
    func droppedRoomStaysDropped() {
        var attempt = laned(roomLanes, roomIsTheSenders: false, taking: typeOnly)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        #expect(attempt.lookedAgain(roomLanes) == .deliver(dropRoom: true))
    }

    @Test("a dropped room replaced by another room meanwhile: retry, since the new room may be the sender's")
    func droppedRoomReplaced() {
        var attempt = laned(roomLanes, roomIsTheSenders: false, taking: typeOnly)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        let replaced = Lanes(type: type, room: otherRoom, hearsSeveralRooms: true)
        #expect(attempt.lookedAgain(replaced) == .retry)
    }

    @Test("a first subscription to the room between the looks: retry")
    func firstSubscriptionToTheRoom() {
        var attempt = laned(typeOnly, taking: typeOnly)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        #expect(attempt.lookedAgain(roomLanes) == .retry)
        #expect(attempt._phase == .stale)
    }

    @Test("the type's last subscription to several rooms gone between the looks: retry")
    func typeLaneGone() {
        var attempt = laned(roomLanes, taking: roomLanes)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        #expect(attempt.lookedAgain(Lanes(type: type, room: room, hearsSeveralRooms: false)) == .retry)
    }

    @Test("a first tap, or the last gone, between the looks: retry before looking again")
    func tapsChanged() {
        var first = laned(roomLanes, taking: roomLanes)
        #expect(first.tookLanes(tapped: true) == .retry, "a first tap")
        var last = laned(roomLanes, tapsLane: taps, taking: roomLanes)
        #expect(last.tookLanes(tapped: false) == .retry, "the last tap gone")
        var still = laned(roomLanes, tapsLane: taps, taking: roomLanes)
        #expect(still.tookLanes(tapped: true) == .lookAgain, "someone still taps")
    }

    @Test("a retired table at either look: return empty, take nothing")
    func retired() {
        var early = PostAttempt()
        #expect(early.looked(nil, roomIsTheSenders: true, tapsLane: taps) == .returnEmpty)
        var late = laned(roomLanes, taking: roomLanes)
        #expect(late.tookLanes(tapped: false) == .lookAgain)
        #expect(late.lookedAgain(nil) == .returnEmpty)
        #expect(late._phase == .retired)
    }

    @Test("a post that reaches no subscription holds no lane and still delivers (to the taps)")
    func noLanes() {
        var attempt = laned(Lanes(), tapsLane: taps, taking: Lanes())
        #expect(attempt.tookLanes(tapped: true) == .lookAgain)
        #expect(attempt.lookedAgain(Lanes()) == .deliver(dropRoom: false))
    }

    @Test("work under the second look that finds it must look again (a room's history gone) makes the attempt stale")
    func workWentStale() {
        var attempt = laned(roomLanes, taking: roomLanes)
        #expect(attempt.tookLanes(tapped: false) == .lookAgain)
        #expect(attempt.lookedAgain(roomLanes) == .deliver(dropRoom: false))
        attempt.workWentStale()
        #expect(attempt._phase == .stale)
    }
}
