// expect-error: 'serve(delivering:receiving:)' is unavailable: serve the resumption's mail, after telling the client its gap: resumption.mail.serve(delivering:receiving:)
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A resumption served as if it were its mail.
func serve(_ mailroom: Mailroom) async throws -> ConnectionEnd {
    let resumed = try await mailroom.subscribe(to: Score.self, after: nil, backlog: .ending(past: 10))
    return await resumed.serve {
        print($0)
    } receiving: {
    }
}
