// expect-error: 'subscriberCount(for:from:)' is unavailable: use subscriberCount(_:from:); note that from: .everyone now counts every subscription to the type, as leaving it out does
import AsyncMail

struct Ping: Mail { let id: Int }

/// `subscriberCount(for:from: .everyone)` once counted only the every-sender subscriptions.
func everySenderListeners(_ mailroom: Mailroom) async -> Int {
    await mailroom.subscriberCount(for: Ping.self, from: .everyone)
}
