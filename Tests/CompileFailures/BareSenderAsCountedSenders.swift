// expect-error: 'subscriberCount(_:from:)' is unavailable: name one sender with .only: subscriberCount(_:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// So does `subscriberCount`.
func listeners(_ mailroom: Mailroom, player: Player) async -> Int {
    await mailroom.subscriberCount(Score.self, from: player)
}
