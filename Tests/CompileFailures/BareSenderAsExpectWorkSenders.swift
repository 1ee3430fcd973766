// expect-error: 'expectWork(_:from:running:within:sourceLocation:)' is unavailable: name one sender with .only: expectWork(_:from: .only(sender), running:)
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, checking demand-driven work.
func idle(_ mailroom: Mailroom, room: Room) async {
    await mailroom.expectWork(Score.self, from: room, running: false)
}
