// expect-error: 'expectMail(_:from:within:during:)' is unavailable: label the mail type: expectMail(of: OrderPlaced.self) { ... }
import AsyncMail
import AsyncMailTesting

struct OrderPlaced: Mail { let id: Int }

/// The first thing a newcomer types: the mail type without `of:`.
func placesAnOrder(_ mailroom: Mailroom) async {
    await mailroom.expectMail(OrderPlaced.self) {
        await mailroom.post(OrderPlaced(id: 1))
    }
}
