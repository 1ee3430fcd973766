// expect-error: 'post(_:from:)' is unavailable: a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'
import AsyncMail

struct Moved: Mail { let square: Int }
struct Position: Sendable { var x, y: Double }

/// A sender is matched by identity or equality; a value with neither cannot be a sender.
func move(_ mailroom: Mailroom) async {
    await mailroom.post(Moved(square: 1), from: Position(x: 0, y: 0))
}
