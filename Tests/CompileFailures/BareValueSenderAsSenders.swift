// expect-error: 'subscribe(to:from:bufferingPolicy:startingWithLatest:where:)' is unavailable: name one sender with .only: subscribe(to:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

enum Station: Hashable, Sendable { case grill, salad }

/// `post` takes the bare sender; every other call names it with `.only(…)`.
func grillScores(_ mailroom: Mailroom) async -> AsyncStream<Score> {
    await mailroom.subscribe(to: Score.self, from: Station.grill)
}
