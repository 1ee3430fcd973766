// expect-error: 'only' is unavailable: a sender is an object, matched by identity, or a Hashable value, matched by equality: make it Hashable
import AsyncMail

struct Score: Mail { let points: Int }
struct Position: Sendable { var x, y: Double }

/// A value that is not Hashable cannot be matched by equality, so it cannot pin a subscription.
func scores(_ mailroom: Mailroom) async -> AsyncStream<Score> {
    await mailroom.subscribe(to: Score.self, from: .only(Position(x: 0, y: 0)))
}
