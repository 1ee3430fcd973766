// expect-error: 'observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)' is unavailable: a sender type is not a sender: use observe(_:fromAny:owner:) to hear every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// An observation of every player's scores is `fromAny: Player.self`.
func watch(_ mailroom: Mailroom, board: Player) async -> Observation {
    await mailroom.observe(Score.self, from: Player.self, owner: board) { _, _ in }
}
