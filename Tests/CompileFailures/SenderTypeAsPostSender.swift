// expect-error: 'post(_:from:)' is unavailable: a sender type is not a sender: post from the sender itself (a player, not Player.self)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A metatype is Sendable, so this once compiled and posted from the type itself, as a value.
func score(_ mailroom: Mailroom) async {
    await mailroom.post(Score(points: 1), from: Player.self)
}
