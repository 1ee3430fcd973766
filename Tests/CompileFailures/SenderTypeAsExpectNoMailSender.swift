// expect-error: 'expectNoMail(_:from:waiting:sourceLocation:during:)' is unavailable: a sender type is not a sender: use expectNoMail(_:fromAny:) to expect no mail from every sender of a type
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A sender type where one sender goes, in a test that nothing comes.
func quiet(_ mailroom: Mailroom) async {
    await mailroom.expectNoMail(Score.self, from: Player.self) {}
}
