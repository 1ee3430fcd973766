// expect-error: 'expectMail(_:count:from:within:sourceLocation:during:)' is unavailable: a sender type is not a sender: use expectMail(_:count:fromAny:) to expect mail from every sender of a type
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A sender type where one sender goes, in a test.
func scores(_ mailroom: Mailroom) async {
    await mailroom.expectMail(Score.self, from: Player.self) {
        await mailroom.post(Score(points: 1), from: Player())
    }
}
