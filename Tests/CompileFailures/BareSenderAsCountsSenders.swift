// expect-error: 'subscriberCounts(_:from:)' is unavailable: name one sender with .only: subscriberCounts(_:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, watching counts.
func listeners(_ mailroom: Mailroom, room: Room) async -> AsyncStream<Int> {
    await mailroom.subscriberCounts(Score.self, from: room)
}
