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

    private func expectTakes(_ attempt: PostAttempt, after action: PostAttempt.Action, _ lanes: Lanes, tapsLane: Lane?)
    {
        guard case .takeLanes = action else {
            Issue.record("expected takeLanes, got \(action)")
            return
        }
        #expect(attempt.lanes.holdsTheSameLanes(as: lanes))
        #expect(attempt.tapsLane === tapsLane)
    }

    @Test("the same lanes at both looks: deliver, keeping the room")
    func sameLanesDeliver() {
        var attempt = PostAttempt()
        let looked = attempt.looked(roomLanes, roomIsTheSenders: true, tapsLane: nil)
        expectTakes(attempt, after: looked, roomLanes, tapsLane: nil)
        guard case .lookAgain = attempt.tookLanes(tapped: false) else {
            Issue.record("expected lookAgain")
            return
        }
        guard case .deliver(let dropRoom) = attempt.lookedAgain(roomLanes) else {
            Issue.record("expected deliver")
            return
        }
        #expect(!dropRoom)
        guard case .confirmed = attempt._phase else {
            Issue.record("expected confirmed, got \(attempt._phase)")
            return
        }
    }

    @Test("a room that is not the sender's is not taken, and stays dropped at the second look")
    func droppedRoomStaysDropped() {
        var attempt = PostAttempt()
        let typeOnly = Lanes(type: type, room: nil, hearsSeveralRooms: true)
        let looked = attempt.looked(roomLanes, roomIsTheSenders: false, tapsLane: nil)
        expectTakes(attempt, after: looked, typeOnly, tapsLane: nil)
        _ = attempt.tookLanes(tapped: false)
        guard case .deliver(let dropRoom) = attempt.lookedAgain(roomLanes) else {
            Issue.record("expected deliver")
            return
        }
        #expect(dropRoom)
    }

    @Test("a dropped room replaced by another room meanwhile: retry, since the new room may be the sender's")
    func droppedRoomReplaced() {
        var attempt = PostAttempt()
        _ = attempt.looked(roomLanes, roomIsTheSenders: false, tapsLane: nil)
        _ = attempt.tookLanes(tapped: false)
        let replaced = Lanes(type: type, room: otherRoom, hearsSeveralRooms: true)
        guard case .retry = attempt.lookedAgain(replaced) else {
            Issue.record("expected retry")
            return
        }
    }

    @Test("a first subscription to the room between the looks: retry")
    func firstSubscriptionToTheRoom() {
        var attempt = PostAttempt()
        let typeOnly = Lanes(type: type, room: nil, hearsSeveralRooms: true)
        _ = attempt.looked(typeOnly, roomIsTheSenders: true, tapsLane: nil)
        _ = attempt.tookLanes(tapped: false)
        guard case .retry = attempt.lookedAgain(roomLanes) else {
            Issue.record("expected retry")
            return
        }
        guard case .stale = attempt._phase else {
            Issue.record("expected stale, got \(attempt._phase)")
            return
        }
    }

    @Test("the type's last subscription to several rooms gone between the looks: retry")
    func typeLaneGone() {
        var attempt = PostAttempt()
        _ = attempt.looked(roomLanes, roomIsTheSenders: true, tapsLane: nil)
        _ = attempt.tookLanes(tapped: false)
        guard case .retry = attempt.lookedAgain(Lanes(type: type, room: room, hearsSeveralRooms: false)) else {
            Issue.record("expected retry")
            return
        }
    }

    @Test("a first tap, or the last gone, between the looks: retry before looking again")
    func tapsChanged() {
        var first = PostAttempt()
        let looked = first.looked(roomLanes, roomIsTheSenders: true, tapsLane: nil)
        expectTakes(first, after: looked, roomLanes, tapsLane: nil)
        guard case .retry = first.tookLanes(tapped: true) else {
            Issue.record("expected retry on a first tap")
            return
        }
        var last = PostAttempt()
        let lastLooked = last.looked(roomLanes, roomIsTheSenders: true, tapsLane: taps)
        expectTakes(last, after: lastLooked, roomLanes, tapsLane: taps)
        guard case .retry = last.tookLanes(tapped: false) else {
            Issue.record("expected retry when the last tap is gone")
            return
        }
        var still = PostAttempt()
        _ = still.looked(roomLanes, roomIsTheSenders: true, tapsLane: taps)
        guard case .lookAgain = still.tookLanes(tapped: true) else {
            Issue.record("expected lookAgain while someone still taps")
            return
        }
    }

    @Test("a retired table at either look: return empty, take nothing")
    func retired() {
        var early = PostAttempt()
        guard case .returnEmpty = early.looked(nil, roomIsTheSenders: true, tapsLane: taps) else {
            Issue.record("expected returnEmpty at the first look")
            return
        }
        var late = PostAttempt()
        _ = late.looked(roomLanes, roomIsTheSenders: true, tapsLane: nil)
        _ = late.tookLanes(tapped: false)
        guard case .returnEmpty = late.lookedAgain(nil) else {
            Issue.record("expected returnEmpty at the second look")
            return
        }
        guard case .retired = late._phase else {
            Issue.record("expected retired, got \(late._phase)")
            return
        }
    }

    @Test("a post that reaches no subscription holds no lane and still delivers (to the taps)")
    func noLanes() {
        var attempt = PostAttempt()
        let looked = attempt.looked(Lanes(), roomIsTheSenders: true, tapsLane: taps)
        expectTakes(attempt, after: looked, Lanes(), tapsLane: taps)
        _ = attempt.tookLanes(tapped: true)
        guard case .deliver(let dropRoom) = attempt.lookedAgain(Lanes()) else {
            Issue.record("expected deliver")
            return
        }
        #expect(!dropRoom)
    }

    @Test("work under the second look that finds it must look again (a room's history gone) makes the attempt stale")
    func workWentStale() {
        var attempt = PostAttempt()
        _ = attempt.looked(roomLanes, roomIsTheSenders: true, tapsLane: nil)
        _ = attempt.tookLanes(tapped: false)
        _ = attempt.lookedAgain(roomLanes)
        attempt.workWentStale()
        guard case .stale = attempt._phase else {
            Issue.record("expected stale, got \(attempt._phase)")
            return
        }
    }
}
