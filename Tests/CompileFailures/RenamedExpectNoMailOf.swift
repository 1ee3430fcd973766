// expect-error: 'expectNoMail(of:from:waiting:sourceLocation:during:)' has been renamed to 'expectNoMail(_:from:waiting:sourceLocation:during:)'
import AsyncMail
import AsyncMailTesting

struct OrderPlaced: Mail { let id: Int }

/// `expectNoMail(of:)` before 1.0; the compiler names its new call.
func placesNothing(_ mailroom: Mailroom) async {
    await mailroom.expectNoMail(of: OrderPlaced.self) {}
}
