// expect-error: 'whileSubscribed(to:from:stopAfter:run:)' is unavailable: name one sender with .only: whileSubscribed(to:from: .only(sender))
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, for demand-driven work.
func feed(_ mailroom: Mailroom, room: Room) async {
    await mailroom.whileSubscribed(to: Score.self, from: room) {}
}
