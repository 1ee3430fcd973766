// expect-error: 'expectMail(_:from:within:sourceLocation:during:where:)' is unavailable: name one sender with .only: expectMail(_:from: .only(sender), during:where:)
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, in a test with a predicate.
func scores(_ mailroom: Mailroom, room: Room) async {
    await mailroom.expectMail(Score.self, from: room) {
        await mailroom.post(Score(points: 1), from: room)
    } where: {
        $0.points == 1
    }
}
