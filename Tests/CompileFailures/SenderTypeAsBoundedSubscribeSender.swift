// expect-error: 'subscribe(to:from:backlog:startingWithLatest:where:)' is unavailable: a sender type is not a sender: use subscribe(to:fromAny:backlog:) to hear every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// The same with a backlog limit.
func scores(_ mailroom: Mailroom) async -> BoundedStream<Score> {
    await mailroom.subscribe(to: Score.self, from: Player.self, backlog: .ending(past: 64))
}
