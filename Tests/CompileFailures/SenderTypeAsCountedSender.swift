// expect-error: 'subscriberCount(for:from:)' is unavailable: a sender type is not a sender: subscriberCount(for:from:) counts one sender's subscriptions: from: .only(sender)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// This once compiled and counted the subscriptions pinned to the metatype as a sender value.
func count(_ mailroom: Mailroom) async -> Int {
    await mailroom.subscriberCount(for: Score.self, from: Player.self)
}
