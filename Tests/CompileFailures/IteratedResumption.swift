// expect-error: 'makeAsyncIterator()' is unavailable: a Resumption is not a sequence: read its gap, then iterate its mail: for await positioned in resumption.mail
import AsyncMail

struct Score: Mail { let points: Int }
final class Player: Sendable {}
struct Room: Hashable, Sendable { let name: String }

/// A resumption iterated as if it were its mail.
func replay(_ mailroom: Mailroom) async throws {
    let resumed = try await mailroom.subscribe(to: Score.self, after: nil)
    for await score in resumed { print(score) }
}
