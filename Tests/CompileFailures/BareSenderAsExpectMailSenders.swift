// expect-error: 'expectMail(_:count:from:within:sourceLocation:during:)' is unavailable: name one sender with .only: expectMail(_:count:from: .only(sender))
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, in a test.
func scores(_ mailroom: Mailroom, room: Room) async {
    await mailroom.expectMail(Score.self, from: room) {
        await mailroom.post(Score(points: 1), from: room)
    }
}
