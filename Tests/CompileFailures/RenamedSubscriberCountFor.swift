// expect-error: 'subscriberCount(for:)' has been renamed to 'subscriberCount(_:)'
import AsyncMail

struct Ping: Mail { let id: Int }

/// `subscriberCount(for:)` before 1.0; the compiler names its new call.
func listeners(_ mailroom: Mailroom) async -> Int {
    await mailroom.subscriberCount(for: Ping.self)
}
