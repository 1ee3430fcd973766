// expect-error: 'subscribeToAllMail(bufferingPolicy:where:)' has been renamed to 'tap(bufferingPolicy:where:)'
import AsyncMail

/// The tap was `subscribeToAllMail()` before 1.0; the compiler names its new call.
func everything(_ mailroom: Mailroom) async -> AsyncStream<PostedMail> {
    await mailroom.subscribeToAllMail()
}
