// expect-error: capture of 'screen' with non-Sendable type 'Screen' in a '@Sendable' closure
// swift5: expect-error: 'post(_:from:)' is unavailable: a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'
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
