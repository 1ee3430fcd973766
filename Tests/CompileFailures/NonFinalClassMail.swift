// expect-error: non-final class 'Settings' cannot conform to the 'Sendable' protocol
import AsyncMail

/// A subclass could add unsynchronised state, so a non-final class cannot be Mail.
class Settings: Mail {
    var theme = "dark"
}
