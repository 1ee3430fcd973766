// expect-success
// The testing helpers as a newcomer writes them first: the mail type first and unlabelled.
import AsyncMail
import AsyncMailTesting
import Testing

struct OrderPlaced: Mail { let id: Int }
final class Chef: Sendable {}

func placesAnOrder(_ mailroom: Mailroom) async {
    await mailroom.expectMail(OrderPlaced.self) {
        await mailroom.post(OrderPlaced(id: 1))
    }
    await mailroom.expectMail(OrderPlaced.self, count: 2, fromAny: Chef.self) {
        await mailroom.post(contentsOf: [OrderPlaced(id: 2), OrderPlaced(id: 3)], from: Chef())
    }
    await mailroom.expectMail(OrderPlaced.self) {
        await mailroom.post(OrderPlaced(id: 4))
    } where: {
        $0.id == 4
    }
    await mailroom.expectNoMail(OrderPlaced.self) {}
    await mailroom.expectNoMail(OrderPlaced.self, fromAny: Chef.self) {}
    let _: Int = await mailroom.subscriberCount(OrderPlaced.self)
}
