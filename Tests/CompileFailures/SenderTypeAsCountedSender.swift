// expect-error: cannot convert value of type 'Player.Type' to expected argument type 'Senders'
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// This once compiled and counted the subscriptions pinned to the metatype as a sender value.
func count(_ mailroom: Mailroom) async -> Int {
    await mailroom.subscriberCount(for: Score.self, from: Player.self)
}
