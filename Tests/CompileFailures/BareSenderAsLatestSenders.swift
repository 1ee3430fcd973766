// expect-error: 'latest(_:from:)' is unavailable: name one sender with .only: latest(_:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// `latest` names its sender with `.only(…)` too.
func lastScore(_ mailroom: Mailroom, player: Player) async -> Score? {
    await mailroom.latest(Score.self, from: player)
}
