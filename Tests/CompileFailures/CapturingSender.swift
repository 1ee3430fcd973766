// expect-error: capture of 'screen' with non-Sendable type 'Screen' in a '@Sendable' closure
import AsyncMail

struct Refresh: Mail {}

final class Screen {
    var title = "Inbox"
}

/// A sender that carries a callback must keep it @Sendable, so it cannot capture non-Sendable state.
struct Tab: Sendable {
    let title: @Sendable () -> String
}

func refresh(_ mailroom: Mailroom, screen: Screen) async {
    await mailroom.post(Refresh(), from: Tab(title: { screen.title }))
}
