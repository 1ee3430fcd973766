import AsyncMail
import Testing

enum Kitchen {
    struct Note: Mail, Equatable { let text: String }
}

enum Garden {
    struct Note: Mail, Equatable { let text: String }
}

@Suite("Routing by type identity")
struct RoutingTests {
    @Test("two types with the same name never see each other's mail")
    func sameNameDifferentType() async throws {
        let mailroom = Mailroom()
        let garden = await mailroom.subscribe(to: Garden.Note.self)
        let kitchen = await mailroom.subscribe(to: Kitchen.Note.self)

        #expect(String(describing: Garden.Note.self) == String(describing: Kitchen.Note.self))
        #expect(await mailroom.post(Kitchen.Note(text: "soup")) == Receipt(delivered: 1, dropped: 0))
        #expect(await mailroom.post(Garden.Note(text: "roses")) == Receipt(delivered: 1, dropped: 0))

        // Each stream's first mail is its own type's: nothing crossed over.
        let gardenFirst = try await garden.first(1)
        let kitchenFirst = try await kitchen.first(1)
        #expect(gardenFirst == [Garden.Note(text: "roses")])
        #expect(kitchenFirst == [Kitchen.Note(text: "soup")])
        await mailroom.expectNoMail(Garden.Note.self) {
            await mailroom.post(Kitchen.Note(text: "bread"))
        }
    }

    @Test("a post reaches only subscriptions of its type and sender, however many others exist")
    func postTouchesOnlyMatches() async throws {
        let mailroom = Mailroom()
        var others: [AsyncStream<Pong>] = []
        var pinned: [AsyncStream<Ping>] = []
        for index in 0..<1_000 {
            others.append(await mailroom.subscribe(to: Pong.self))
            pinned.append(await mailroom.subscribe(to: Ping.self, from: .only(RoomID("room-\(index)"))))
        }
        let mine = await mailroom.subscribe(to: Ping.self, from: .only(RoomID("mine")))
        #expect(await mailroom.post(Ping(id: 1), from: RoomID("mine")) == Receipt(delivered: 1, dropped: 0))
        #expect(await mailroom.post(Ping(id: 2)) == Receipt())
        #expect(try await mine.first(1) == [Ping(id: 1)])
        #expect(await mailroom.subscriberCount(Ping.self) == 1_001)
        #expect(await mailroom.subscriberCount(Pong.self) == 1_000)
        withExtendedLifetime((others, pinned)) {}
    }

    @Test("a type nobody subscribes to costs a post nothing and delivers nowhere")
    func noSubscribers() async {
        let mailroom = Mailroom()
        #expect(await mailroom.post(Ping(id: 1)) == Receipt())
        #expect(await mailroom.post(Ping(id: 1), from: Player("p")) == Receipt())
        #expect(await mailroom.subscriberCount(Ping.self) == 0)
    }

    @Test("a type whose table was dropped and made again routes to the new table, in runs and alternating")
    func tableMadeAgainAfterDrop() async throws {
        let mailroom = Mailroom()
        var first: AsyncStream<Kitchen.Note>? = await mailroom.subscribe(to: Kitchen.Note.self)
        #expect(await mailroom.post(Kitchen.Note(text: "one")) == Receipt(delivered: 1))
        #expect(first != nil)
        // Dropping the only subscription drops the type's table; the last post looked it up.
        first = nil
        #expect(await mailroom.post(Kitchen.Note(text: "nobody")) == Receipt())

        let second = await mailroom.subscribe(to: Kitchen.Note.self)
        let garden = await mailroom.subscribe(to: Garden.Note.self)
        #expect(await mailroom.post(Kitchen.Note(text: "two")) == Receipt(delivered: 1))
        #expect(await mailroom.post(Garden.Note(text: "roses")) == Receipt(delivered: 1))
        #expect(await mailroom.post(Kitchen.Note(text: "three")) == Receipt(delivered: 1))
        #expect(try await second.first(2).map(\.text) == ["two", "three"])
        #expect(try await garden.first(1).map(\.text) == ["roses"])

        await mailroom.close()
        #expect(await mailroom.post(Kitchen.Note(text: "closed")) == Receipt())
    }
}
