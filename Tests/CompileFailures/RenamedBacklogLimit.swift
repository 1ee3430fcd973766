// expect-error: 'subscribe(to:from:backlogLimit:startingWithLatest:where:)' is unavailable: use subscribe(to:from:backlog: .ending(past: backlogLimit))
import AsyncMail

struct Line: Mail {}

func old(_ mailroom: Mailroom) async {
    _ = await mailroom.subscribe(to: Line.self, backlogLimit: 256)
}
