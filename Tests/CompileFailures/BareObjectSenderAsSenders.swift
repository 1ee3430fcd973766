// expect-error: 'subscribe(to:from:backlog:startingWithLatest:where:)' is unavailable: name one sender with .only: subscribe(to:from: .only(sender), backlog:)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// The same with an object sender and a backlog limit.
func playerScores(_ mailroom: Mailroom, player: Player) async -> BoundedStream<Score> {
    await mailroom.subscribe(to: Score.self, from: player, backlog: .ending(past: 64))
}
