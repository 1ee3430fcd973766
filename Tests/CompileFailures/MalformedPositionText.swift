// expect-error: 'init(_:)' is unavailable: a position from outside is untrusted: use try MailPosition(parsing:), which says why it is refused
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A position from a client read with a failable init would turn garbage into nil, which `after:` reads as "start live".
func resume(_ mailroom: Mailroom, text: String) async throws -> Resumption<AsyncStream<Positioned<Score>>> {
    try await mailroom.subscribe(to: Score.self, after: MailPosition(text))
}
