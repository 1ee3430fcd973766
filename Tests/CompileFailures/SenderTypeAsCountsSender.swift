// expect-error: 'subscriberCounts(_:from:)' is unavailable: a sender type is not a sender: use subscriberCounts(_:fromAny:) to watch the subscriptions to every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A sender type where one sender goes, watching counts.
func listeners(_ mailroom: Mailroom) async -> AsyncStream<Int> {
    await mailroom.subscriberCounts(Score.self, from: Player.self)
}
