import AsyncMail
import Synchronization
import Testing

/// Counts how many ``Tracked`` objects have been freed.
final class FreedCount: Sendable {
    private let freed = Atomic(0)

    var value: Int { freed.load(ordering: .acquiring) }

    func increment() { freed.add(1, ordering: .releasing) }
}

/// An object that reports its own deallocation, carried by ``Parcel`` mail.
final class Tracked: Sendable {
    let count: FreedCount

    init(_ count: FreedCount) { self.count = count }

    deinit { count.increment() }
}

/// Mail that holds a ``Tracked`` object: it is freed only when every copy of the mail is.
struct Parcel: Mail {
    let contents: Tracked
}

// A subscription's termination handler holds its subscriber, which holds the stream's
// continuation, whose storage holds the handler. The cycle is broken when the handler runs.
// These tests prove that every way a stream can end runs it, so nothing is kept alive:
// buffered mail is freed as soon as the last reference to its stream goes.
@Suite("Ended streams keep nothing alive")
struct ReleaseTests {
    @Test("an unread stream that is dropped frees its buffered mail")
    func droppedUnread() async {
        let freed = FreedCount()
        let mailroom = Mailroom()
        do {
            let parcels = await mailroom.subscribe(to: Parcel.self)
            for _ in 0..<3 { await mailroom.post(Parcel(contents: Tracked(freed))) }
            #expect(freed.value == 0)
            withExtendedLifetime(parcels) {}
        }
        #expect(freed.value == 3)
    }

    @Test("a stream finished by close() frees its buffered mail once dropped")
    func closed() async {
        let freed = FreedCount()
        let mailroom = Mailroom()
        do {
            let parcels = await mailroom.subscribe(to: Parcel.self, from: .only(RoomID("lobby")))
            await mailroom.post(Parcel(contents: Tracked(freed)), from: RoomID("lobby"))
            await mailroom.close()
            #expect(freed.value == 0)
            withExtendedLifetime(parcels) {}
        }
        #expect(freed.value == 1)
    }

    @Test("a stream whose pinned sender departed frees its buffered mail once dropped")
    func departedSender() async {
        let freed = FreedCount()
        let mailroom = Mailroom()
        do {
            var player: Player? = Player("ada")
            let parcels = await mailroom.subscribe(to: Parcel.self, from: .only(player!))
            await mailroom.post(Parcel(contents: Tracked(freed)), from: player!)
            player = nil
            // Counting ends the departed sender's subscription.
            #expect(await mailroom.subscriberCount(Parcel.self) == 0)
            withExtendedLifetime(parcels) {}
        }
        #expect(freed.value == 1)
    }

    @Test("streams outliving their mailroom free their buffered mail once dropped")
    func mailroomGone() async throws {
        let freed = FreedCount()
        var mailroom: Mailroom? = Mailroom()
        let parcels = await mailroom!.subscribe(to: Parcel.self)
        let envelopes = await mailroom!.subscribe(to: Parcel.self, fromAny: Player.self)
        await mailroom!.post(Parcel(contents: Tracked(freed)), from: Player("ada"))
        mailroom = nil
        // Both streams finished when the mailroom went; they still hold the mail until dropped.
        #expect(freed.value == 0)
        #expect(try await parcels.collect().count == 1)
        #expect(try await envelopes.collect().count == 1)
        #expect(freed.value == 1)
    }

    @Test("subscriptions racing close() are all released")
    func subscribeRacingClose() async throws {
        let freed = FreedCount()
        do {
            let mailroom = Mailroom()
            await mailroom.retainLatest(Parcel.self)
            // Every new stream starts with this one shared mail; it is freed only when the
            // mailroom and every stream that replayed it have let go.
            await mailroom.post(Parcel(contents: Tracked(freed)))
            try await withTimeout {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<scaled(400) {
                        group.addTask {
                            let parcels = await mailroom.subscribe(to: Parcel.self, startingWithLatest: true)
                            withExtendedLifetime(parcels) {}
                        }
                        if index == scaled(200) { group.addTask { await mailroom.close() } }
                    }
                }
            }
        }
        #expect(freed.value == 1)
    }
}
