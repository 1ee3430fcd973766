// expect-error: cannot convert value of type 'Player.Type' to expected argument type 'Senders'
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// This once compiled and asked for the mail posted from the metatype as a sender value.
func latest(_ mailroom: Mailroom) async -> Score? {
    await mailroom.latest(Score.self, from: Player.self)
}
