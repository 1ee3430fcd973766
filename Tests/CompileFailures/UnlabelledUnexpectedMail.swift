// expect-error: 'expectNoMail(_:from:waiting:during:)' is unavailable: label the mail type: expectNoMail(of: OrderPlaced.self) { ... }
import AsyncMail
import AsyncMailTesting

struct OrderPlaced: Mail { let id: Int }

/// The same for expecting nothing.
func placesNothing(_ mailroom: Mailroom) async {
    await mailroom.expectNoMail(OrderPlaced.self) {}
}
