// expect-error: 'latest(_:from:)' is unavailable: a sender type is not a sender: use latest(_:fromAny:) for the newest mail of every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// This once compiled and asked for the mail posted from the metatype as a sender value.
func latest(_ mailroom: Mailroom) async -> Score? {
    await mailroom.latest(Score.self, from: Player.self)
}
