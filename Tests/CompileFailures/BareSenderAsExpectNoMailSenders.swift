// expect-error: 'expectNoMail(_:from:waiting:sourceLocation:during:)' is unavailable: name one sender with .only: expectNoMail(_:from: .only(sender))
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, in a test that nothing comes.
func quiet(_ mailroom: Mailroom, room: Room) async {
    await mailroom.expectNoMail(Score.self, from: room) {}
}
