// expect-error: 'observe(_:from:owner:backlogLimit:startingWithLatest:where:handler:)' is unavailable: use observe(_:from:owner:backlog: .ending(past: backlogLimit))
import AsyncMail

struct Line: Mail {}
final class Owner: Sendable {}

func old(_ mailroom: Mailroom, owner: Owner) async {
    await mailroom.observe(Line.self, owner: owner, backlogLimit: 256) { _, _ in }
}
