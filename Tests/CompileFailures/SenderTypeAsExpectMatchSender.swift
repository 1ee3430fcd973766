// expect-error: 'expectMail(_:from:within:sourceLocation:during:where:)' is unavailable: a sender type is not a sender: use expectMail(_:fromAny:during:where:) to expect mail from every sender of a type
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A sender type where one sender goes, in a test with a predicate.
func scores(_ mailroom: Mailroom) async {
    await mailroom.expectMail(Score.self, from: Player.self) {
        await mailroom.post(Score(points: 1), from: Player())
    } where: {
        $0.points == 1
    }
}
