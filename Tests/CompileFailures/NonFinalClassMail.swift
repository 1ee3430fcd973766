// expect-error: non-final class 'Settings' cannot conform to the 'Sendable' protocol
// swift5: expect-warning: non-final class 'Settings' cannot conform to the 'Sendable' protocol; this is an error in the Swift 6 language mode
import AsyncMail

/// A subclass could add unsynchronised state, so a non-final class cannot be Mail.
class Settings: Mail {
    var theme = "dark"
}
