// expect-error: 'forward(_:object:from:as:)' has been renamed to 'forward(_:object:in:as:)'
import AsyncMail
import AsyncMailFoundation
import Foundation

struct Terminated: Mail { let pid: Int32 }

/// `from:` only ever names a sender; the center a bridge listens in is `in:`.
func bridge(_ mailroom: Mailroom, center: NotificationCenter) async -> NotificationForwarding {
    await mailroom.forward(Notification.Name("terminated"), from: center) { _ in Terminated(pid: 1) }
}
