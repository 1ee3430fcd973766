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
}
