// expect-error: 'whileSubscribed(to:from:stopAfter:run:)' is unavailable: a sender type is not a sender: use whileSubscribed(to:fromAny:) to run while someone hears every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A sender type where one sender goes, for demand-driven work.
func feed(_ mailroom: Mailroom) async {
    await mailroom.whileSubscribed(to: Score.self, from: Player.self) {}
}
