// expect-error: type 'Screen' does not conform to the 'Sendable' protocol
// swift5: expect-success
import AsyncMail

struct Refresh: Mail {}

final class Screen {
    var title = "Inbox"
}

/// Senders cross into the mailroom's isolation, so they must be Sendable too.
func refresh(_ mailroom: Mailroom, screen: Screen) async {
    await mailroom.post(Refresh(), from: screen)
}
