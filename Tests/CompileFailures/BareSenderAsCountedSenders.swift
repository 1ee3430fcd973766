// expect-error: 'subscriberCount(for:from:)' is unavailable: name one sender with .only: subscriberCount(for:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// So does `subscriberCount`.
func listeners(_ mailroom: Mailroom, player: Player) async -> Int {
    await mailroom.subscriberCount(for: Score.self, from: player)
}
