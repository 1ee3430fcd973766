// expect-error: 'postSynchronously(_:from:)' is unavailable: a sender type is not a sender: post from the sender itself (a player, not Player.self)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

func score(_ mailroom: Mailroom) {
    mailroom.postSynchronously(Score(points: 1), from: Player.self)
}
