// expect-error: 'expectMail(_:of:from:within:sourceLocation:during:)' is unavailable: the mail type comes first, unlabelled: expectMail(OrderPlaced.self, count: 2) { ... }
import AsyncMail
import AsyncMailTesting

struct OrderPlaced: Mail { let id: Int }

/// The count came first and the mail type was `of:` before 1.0.
func placesTwo(_ mailroom: Mailroom) async {
    await mailroom.expectMail(2, of: OrderPlaced.self) {
        await mailroom.post(OrderPlaced(id: 1))
        await mailroom.post(OrderPlaced(id: 2))
    }
}
