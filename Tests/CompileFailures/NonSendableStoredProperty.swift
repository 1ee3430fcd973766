// expect-error: stored property 'counter' of 'Sendable'-conforming struct 'Leaky' has non-Sendable type 'Counter'
import AsyncMail

final class Counter {
    var value = 0
}

/// Mail refines Sendable, so a payload holding shared mutable state is rejected.
struct Leaky: Mail {
    let counter: Counter
}
