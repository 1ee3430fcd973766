// expect-error: 'only' is unavailable: a sender type is not one sender: subscribe(to:fromAny:) hears every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A sender type is not one sender: `fromAny: Player.self` is the subscription for every player.
func scores(_ mailroom: Mailroom) async -> AsyncStream<Score> {
    await mailroom.subscribe(to: Score.self, from: .only(Player.self))
}
