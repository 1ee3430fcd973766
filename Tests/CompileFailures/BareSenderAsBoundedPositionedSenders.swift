// expect-error: 'subscribe(to:from:after:backlog:where:)' is unavailable: name one sender with .only: subscribe(to:from: .only(sender), after:backlog:)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A bare room where `Senders` goes, in a bounded resume.
func resume(_ mailroom: Mailroom, room: Room) async throws -> Resumption<BoundedStream<Positioned<Score>>> {
    try await mailroom.subscribe(to: Score.self, from: room, after: nil, backlog: .ending(past: 10))
}
