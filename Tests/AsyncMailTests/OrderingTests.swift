import AsyncMail
import Testing

@Suite("One order")
struct OrderingTests {
    @Test("all subscribers of a type see one order, and each poster's mail keeps its posting order")
    func oneSharedOrder() async throws {
        let mailroom = Mailroom()
        let posters = 4
        let postsEach = 500
        let subscribers = 5
        let room = RoomID("hall")
        var streams: [AsyncStream<Numbered>] = []
        for index in 0..<subscribers {
            // Mix unfiltered and value-pinned subscriptions: all share the one order.
            streams.append(
                index.isMultiple(of: 2)
                    ? await mailroom.subscribe(to: Numbered.self)
                    : await mailroom.subscribe(to: Numbered.self, from: .only(room))
            )
        }

        let seen: [[Numbered]] = try await withTimeout { [streams] in
            await withTaskGroup(of: [Numbered].self) { group in
                for stream in streams {
                    group.addTask { await stream.untimedFirst(posters * postsEach) }
                }
                for poster in 0..<posters {
                    group.addTask {
                        for sequence in 0..<postsEach {
                            await mailroom.post(Numbered(poster: poster, sequence: sequence), from: room)
                        }
                        return []
                    }
                }
                return await group.reduce(into: [[Numbered]]()) { all, received in
                    if !received.isEmpty { all.append(received) }
                }
            }
        }

        #expect(seen.count == subscribers)
        for received in seen {
            #expect(received.count == posters * postsEach)
            #expect(received == seen[0], "every subscriber sees the same order")
            for poster in 0..<posters {
                let own = received.filter { $0.poster == poster }.map(\.sequence)
                #expect(own == Array(0..<postsEach), "poster \(poster)'s mail stays in posting order")
            }
        }
    }
}
