// expect-error: 'expectMail(_:count:from:after:within:sourceLocation:during:)' is unavailable: a sender type is not a sender: use expectMail(_:count:fromAny:after:) to resume every sender of a type
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A sender type where one sender goes, in a test of a resume.
func scores(_ mailroom: Mailroom) async throws {
    try await mailroom.expectMail(Score.self, from: Player.self, after: nil) {
        await mailroom.post(Score(points: 1), from: Player())
    }
}
