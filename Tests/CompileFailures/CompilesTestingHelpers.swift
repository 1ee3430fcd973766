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

/// The right calls that the misplaced-sender messages name, as a newcomer then writes them.
func theCallsTheMessagesName(_ mailroom: Mailroom, chef: Chef) async throws {
    let room = Chef()
    await mailroom.retainHistory(OrderPlaced.self, count: 10)
    await mailroom.expectMail(OrderPlaced.self, from: .only(chef)) {
        await mailroom.post(OrderPlaced(id: 5), from: chef)
    }
    await mailroom.expectNoMail(OrderPlaced.self, from: .only(room)) {}
    let resumed = try await mailroom.expectMail(OrderPlaced.self, from: .only(chef), after: nil) {
        await mailroom.post(OrderPlaced(id: 6), from: chef)
    }
    let position: MailPosition = try MailPosition(parsing: resumed[0].position.description)
    let again = try await mailroom.subscribe(to: OrderPlaced.self, from: .only(chef), after: position)
    for await positioned in again.mail { _ = positioned.position }
    await mailroom.expectWork(OrderPlaced.self, from: .only(chef), running: false)
    await mailroom.expectWork(OrderPlaced.self, fromAny: Chef.self, running: false)
    let _: AsyncStream<Int> = await mailroom.subscriberCounts(OrderPlaced.self, from: .only(chef))
    await mailroom.whileSubscribed(to: OrderPlaced.self, from: .only(chef), stopAfter: .seconds(5)) {}
    await mailroom.whileSubscribed(to: OrderPlaced.self, fromAny: Chef.self) {}
    let chefs = try await mailroom.expectMail(OrderPlaced.self, fromAny: Chef.self, after: nil) {
        await mailroom.post(OrderPlaced(id: 7), from: chef)
    }
    let _: Chef = chefs[0].mail.sender
    let matched: Envelope<OrderPlaced, Chef>? = await mailroom.expectMail(OrderPlaced.self, fromAny: Chef.self) {
        await mailroom.post(OrderPlaced(id: 8), from: chef)
    } where: {
        $0.id == 8
    }
    _ = matched
    let _: Resumption<BoundedStream<Positioned<Envelope<OrderPlaced, Chef>>>> =
        try await mailroom.subscribe(to: OrderPlaced.self, fromAny: Chef.self, after: nil, backlog: .ending(past: 8))
}
