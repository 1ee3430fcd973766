// expect-error: stored property 'counter' of 'Sendable'-conforming struct 'Leaky' has non-Sendable type 'Counter'
// swift5: expect-warning: stored property 'counter' of 'Sendable'-conforming struct 'Leaky' has non-Sendable type 'Counter'; this is an error in the Swift 6 language mode
import AsyncMail

final class Counter {
    var value = 0
}

/// Mail refines Sendable, so a payload holding shared mutable state is rejected.
struct Leaky: Mail {
    let counter: Counter
}
