// expect-error: 'observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)' is unavailable: name one sender with .only: observe(_:from: .only(sender), owner:)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// So does `observe`.
func watch(_ mailroom: Mailroom, player: Player) async -> Observation {
    await mailroom.observe(Score.self, from: player, owner: player) { _, _ in }
}
