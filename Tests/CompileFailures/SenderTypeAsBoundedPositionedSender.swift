// expect-error: 'subscribe(to:from:after:backlog:where:)' is unavailable: a sender type is not a sender: use subscribe(to:fromAny:after:backlog:) to resume every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}

/// A sender type where one sender goes, in a bounded resume.
func resume(_ mailroom: Mailroom) async throws -> Resumption<BoundedStream<Positioned<Score>>> {
    try await mailroom.subscribe(to: Score.self, from: Player.self, after: nil, backlog: .ending(past: 10))
}
