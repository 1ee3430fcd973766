// expect-error: 'subscribe(to:from:after:bufferingPolicy:where:)' is unavailable: a sender type is not a sender: use subscribe(to:fromAny:after:) to resume every sender of a type
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A sender type where one sender goes, in a resume.
func resume(_ mailroom: Mailroom) async throws -> Resumption<AsyncStream<Positioned<Score>>> {
    try await mailroom.subscribe(to: Score.self, from: Player.self, after: nil)
}
