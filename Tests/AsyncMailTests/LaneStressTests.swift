import Synchronization
import Testing

@testable import AsyncMail

/// Whether `lhs` and `rhs` hold the elements they share in the same order.
func sameOrder<T: Hashable>(_ lhs: [T], _ rhs: [T]) -> Bool {
    let inLeft = Set(lhs)
    let inRight = Set(rhs)
    return lhs.filter(inRight.contains) == rhs.filter(inLeft.contains)
}

/// Whether each poster's mail in `received` keeps its posting order, with no mail twice.
func keepsPostingOrder<M: Stamped>(_ received: [M]) -> Bool {
    var last: [Int: Int] = [:]
    for mail in received {
        if let previous = last[mail.poster], previous >= mail.sequence { return false }
        last[mail.poster] = mail.sequence
    }
    return true
}

/// Who a mixed-lanes post comes from: four value rooms, two object rooms, or nobody.
enum LaneSender: Hashable, Sendable {
    case room(Int)
    case player(Int)
    case none

    static let all: [LaneSender] = [.room(0), .room(1), .room(2), .room(3), .player(0), .player(1), .none]
}

@Suite("Stress: lanes", .tags(.stress), .serialized, .heavyTurns)
struct LaneStressTests {
    /// Poster `poster`'s `index`-th post: alternating types, and every sender in turn.
    static func schedule(poster: Int, index: Int) -> (isAlpha: Bool, sender: LaneSender) {
        (index.isMultiple(of: 2), LaneSender.all[(index / 2 + poster) % LaneSender.all.count])
    }

    @Test(
        "types heard everywhere, independent rooms, taps, and subscriptions to every room coming and going, all at once"
    )
    func mixedLanes() async throws {
        let mailroom = Mailroom()
        let players = [Player("player-0"), Player("player-1")]
        let posters = 6
        let postsEach = scaled(8_000)

        func subscribe<M: Stamped>(_ type: M.Type, to sender: LaneSender?) async -> Task<[M], Never> {
            let stream: AsyncStream<M>
            switch sender {
            case nil: stream = await mailroom.subscribe(to: M.self)
            case .room(let number)?: stream = await mailroom.subscribe(to: M.self, from: .only(RoomID("r\(number)")))
            case .player(let number)?: stream = await mailroom.subscribe(to: M.self, from: .only(players[number]))
            case .none?: preconditionFailure("nothing subscribes to mail without a sender but everyone")
            }
            return Task { await stream.untimedCollect() }
        }
        @Sendable func post<M: Stamped>(_ mail: M, from sender: LaneSender) async {
            switch sender {
            case .room(let number): await mailroom.post(mail, from: RoomID("r\(number)"))
            case .player(let number): await mailroom.post(mail, from: players[number])
            case .none: await mailroom.post(mail)
            }
        }
        // Alpha has two subscriptions to every room, so every Alpha post holds its type's lane.
        // Beta has none but those that come and go below: its rooms are independent between them.
        let rooms: [LaneSender] = [.room(0), .room(1), .room(2), .room(3), .player(0), .player(1)]
        var alphas: [(LaneSender?, Task<[Alpha], Never>)] = [(nil, await subscribe(Alpha.self, to: nil))]
        alphas.append((nil, await subscribe(Alpha.self, to: nil)))
        var betas: [(LaneSender?, Task<[Beta], Never>)] = []
        for room in rooms {
            alphas.append((room, await subscribe(Alpha.self, to: room)))
            betas.append((room, await subscribe(Beta.self, to: room)))
            betas.append((room, await subscribe(Beta.self, to: room)))
        }
        let taps = [await mailroom.tap(), await mailroom.tap()].map { stream in
            Task { await stream.untimedCollect() }
        }

        // Subscriptions to every Beta room, each for a few turns of the scheduler, until posting ends.
        let posting = Atomic<Bool>(true)
        let cycles = Locked(0)
        let churner = Task {
            var seen: [[Beta]] = []
            while posting.load(ordering: .relaxed) {
                let stream = await mailroom.subscribe(to: Beta.self)
                let reader = Task { await stream.untimedCollect() }
                for _ in 0..<20 { await Task.yield() }
                reader.cancel()
                seen.append(await reader.value)
                cycles.withLock { $0 += 1 }
            }
            return seen
        }

        try await withTimeout(.seconds(600)) {
            await withTaskGroup(of: Void.self) { group in
                for poster in 0..<posters {
                    group.addTask {
                        for index in 0..<postsEach {
                            // Halfway, the subscriptions to every Beta room have come and gone
                            // at least twice while the others kept posting.
                            while poster == 0 && index == postsEach / 2 && cycles.withLock({ $0 }) < 2 {
                                await Task.yield()
                            }
                            await cooperate(after: index)
                            let (isAlpha, sender) = Self.schedule(poster: poster, index: index)
                            if isAlpha {
                                await post(Alpha(poster: poster, sequence: index), from: sender)
                            } else {
                                await post(Beta(poster: poster, sequence: index), from: sender)
                            }
                        }
                    }
                }
            }
        }
        posting.store(false, ordering: .relaxed)
        let churned = try await withTimeout { await churner.value }
        await mailroom.close()

        func owed(isAlpha: Bool, hearing sender: LaneSender?) -> [[Int]] {
            (0..<posters).map { poster in
                (0..<postsEach).filter { index in
                    let scheduled = Self.schedule(poster: poster, index: index)
                    return scheduled.isAlpha == isAlpha && (sender == nil || scheduled.sender == sender)
                }
            }
        }
        func check<M: Stamped>(_ subscribers: [(LaneSender?, Task<[M], Never>)], isAlpha: Bool) async throws -> [[M]] {
            var all: [[M]] = []
            for (sender, task) in subscribers {
                let received = try await withTimeout { await task.value }
                var byPoster = Array(repeating: [Int](), count: posters)
                for mail in received { byPoster[mail.poster].append(mail.sequence) }
                #expect(
                    byPoster == owed(isAlpha: isAlpha, hearing: sender),
                    "\(M.self) from \(sender.map { "\($0)" } ?? "everyone"): every post once, in posting order"
                )
                all.append(received)
            }
            return all
        }
        let alphaSeen = try await check(alphas, isAlpha: true)
        let betaSeen = try await check(betas, isAlpha: false)
        #expect(churned.count >= 2, "the subscriptions to every Beta room came and went")

        // Any two subscriptions agree on the order of the posts they both heard.
        for (first, second) in allPairs(alphaSeen) { #expect(sameOrder(first, second), "two Alpha subscriptions") }
        for (first, second) in allPairs(betaSeen + churned) {
            #expect(sameOrder(first, second), "two Beta subscriptions")
        }
        for received in churned { #expect(keepsPostingOrder(received), "a subscription that came and went") }

        // Each tap saw every post once; the two agree on every lane's order, and so do the
        // subscriptions: all of Alpha (heard everywhere), and each Beta room.
        var lanes: [[String: [String]]] = []
        for tap in taps {
            let posted = try await withTimeout { await tap.value }
            #expect(posted.count == 2 * posters * postsEach / 2, "every post, once")
            var byLane: [String: [String]] = [:]
            for mail in posted {
                let (lane, stamp): (String, String)
                if let alpha = mail.mail(as: Alpha.self) {
                    (lane, stamp) = ("Alpha", "\(alpha.poster).\(alpha.sequence)")
                } else if let beta = mail.mail(as: Beta.self) {
                    (lane, stamp) = (
                        "Beta \(laneName(of: mail.sender, players: players))", "\(beta.poster).\(beta.sequence)"
                    )
                } else {
                    continue
                }
                byLane[lane, default: []].append(stamp)
            }
            lanes.append(byLane)
        }
        #expect(lanes[0]["Alpha"] == lanes[1]["Alpha"])
        #expect(lanes[0]["Alpha"] == alphaSeen[0].map { "\($0.poster).\($0.sequence)" })
        for (index, (sender, _)) in betas.enumerated() {
            let name = "Beta \(sender.map { "\($0)" } ?? "")"
            let stamps = betaSeen[index].map { "\($0.poster).\($0.sequence)" }
            #expect(lanes[0][name] == stamps, "\(name): the tap's order is the room's")
            #expect(lanes[1][name] == stamps, "\(name): the tap's order is the room's")
        }
    }
}

/// The lane name of a tapped post's sender, as ``LaneSender`` prints it.
private func laneName(of sender: (any Sendable)?, players: [Player]) -> String {
    if let room = sender as? RoomID, let number = Int(room.name.dropFirst()) { return "\(LaneSender.room(number))" }
    if let player = sender as? Player, let number = players.firstIndex(where: { $0 === player }) {
        return "\(LaneSender.player(number))"
    }
    return "\(LaneSender.none)"
}

/// Every unordered pair of `items`.
private func allPairs<T>(_ items: [T]) -> [(T, T)] {
    items.indices.flatMap { first in items.indices.filter { $0 > first }.map { (items[first], items[$0]) } }
}
