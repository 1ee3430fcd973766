// expect-error: 'subscribe(to:from:bufferingPolicy:startingWithLatest:where:)' is unavailable: a sender type is not a sender: use subscribe(to:fromAny:) to hear every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A sender type where one sender goes: `fromAny:` is the subscription for every player.
func scores(_ mailroom: Mailroom) async -> AsyncStream<Score> {
    await mailroom.subscribe(to: Score.self, from: Player.self)
}
