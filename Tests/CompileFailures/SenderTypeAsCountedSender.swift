// expect-error: 'subscriberCount(_:from:)' is unavailable: a sender type is not a sender: use subscriberCount(_:fromAny:) to count the subscriptions to every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// This once compiled and counted the subscriptions pinned to the metatype as a sender value.
func count(_ mailroom: Mailroom) async -> Int {
    await mailroom.subscriberCount(Score.self, from: Player.self)
}
