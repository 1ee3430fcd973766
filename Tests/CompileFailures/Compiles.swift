// expect-success
// The control case: correct code must type-check, so the script cannot pass by accident.
import AsyncMail

struct Ping: Mail {
    let id: Int
}

final class Settings: Mail {
    let theme: String
    init(theme: String) { self.theme = theme }
}

struct RoomID: Hashable, Sendable {
    let name: String
}

final class Token: Hashable, Sendable {
    let value: Int
    init(value: Int) { self.value = value }
    static func == (lhs: Token, rhs: Token) -> Bool { lhs.value == rhs.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

actor Lobby {}

func everyEntryPoint(_ mailroom: Mailroom, lobby: Lobby, token: Token) async {
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self)
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(lobby))
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(token))
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(RoomID(name: "lobby")))
    let _: AsyncStream<Envelope<Settings, Lobby>> = await mailroom.subscribe(to: Settings.self, fromAny: Lobby.self)
    let _: Receipt = await mailroom.post(Ping(id: 1))
    await mailroom.post(Settings(theme: "dark"), from: lobby)
    await mailroom.post(Ping(id: 2), from: RoomID(name: "lobby"))
    // An existential written inline is a sender too, in either language mode.
    await mailroom.post(Ping(id: 3), from: RoomID(name: "lobby") as any Hashable & Sendable)
    await mailroom.post(contentsOf: [Ping(id: 4)], from: token as any Hashable & Sendable)
    mailroom.postSynchronously(Ping(id: 5), from: RoomID(name: "hall") as any Hashable & Sendable)
}

/// A sender known only by a protocol that refines `Hashable`: posted and subscribed to as it is,
/// in the Swift 5 language mode as in 6.
protocol Named: Hashable, Sendable {
    var name: String { get }
}

extension RoomID: Named {}

func protocolSenders(_ mailroom: Mailroom, named: any Named) async {
    await mailroom.post(Ping(id: 6), from: named)
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(named))
    let _: Ping? = await mailroom.latest(Ping.self, from: .only(named))
}

/// Beside the overloads that explain a sender type or a bare sender where `Senders` goes, every
/// correct form still resolves.
func everySendersForm(_ mailroom: Mailroom, lobby: Lobby, senders: Senders) async {
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: senders)
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .everyone, startingWithLatest: true)
    let _: BoundedStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(lobby), backlog: .ending(past: 8))
    let _: BoundedStream<Envelope<Ping, Lobby>> = await mailroom.subscribe(
        to: Ping.self,
        fromAny: Lobby.self,
        backlog: .ending(past: 8)
    )
    let _: Ping? = await mailroom.latest(Ping.self, from: .only(RoomID(name: "lobby")))
    let _: Int = await mailroom.subscriberCount(Ping.self, from: senders)
    let _: Observation = await mailroom.observe(Ping.self, from: .only(lobby), owner: lobby) { _, _ in }
    let _: Observation = await mailroom.observe(Ping.self, from: senders, owner: lobby, backlog: .ending(past: 4)) {
        _,
        _ in
    }
}

/// A sender written as an existential inline, or held as an optional existential, is posted and
/// pinned as the value inside it.
func boxedSenders(_ mailroom: Mailroom, room: (any Hashable & Sendable)?) async {
    await mailroom.post(Ping(id: 7), from: room)
    await mailroom.post(Ping(id: 8), from: RoomID(name: "lobby") as any Hashable & Sendable)
    await mailroom.post(contentsOf: [Ping(id: 9)], from: room)
    mailroom.postSynchronously(Ping(id: 10), from: room)
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(room))
    let _: AsyncStream<Ping> = await mailroom.subscribe(
        to: Ping.self,
        from: .only(RoomID(name: "lobby") as any Hashable & Sendable)
    )
    let optionalRoom: RoomID? = RoomID(name: "hall")
    await mailroom.post(Ping(id: 11), from: optionalRoom)
    let _: AsyncStream<Ping> = await mailroom.subscribe(to: Ping.self, from: .only(optionalRoom))
}
