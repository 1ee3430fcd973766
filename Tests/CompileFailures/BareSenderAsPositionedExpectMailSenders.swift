// expect-error: 'expectMail(_:count:from:after:within:sourceLocation:during:)' is unavailable: name one sender with .only: expectMail(_:count:from: .only(sender), after:)
import AsyncMail
import AsyncMailTesting

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, in a test of a resume.
func scores(_ mailroom: Mailroom, room: Room) async throws {
    try await mailroom.expectMail(Score.self, from: room, after: nil) {
        await mailroom.post(Score(points: 1), from: room)
    }
}
