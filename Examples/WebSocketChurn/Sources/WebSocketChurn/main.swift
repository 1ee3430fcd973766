// A WebSocket server that reads each connection until the client closes it, and nothing else,
// built on HummingbirdWebSocket alone (no AsyncMail): `GET /stats` says how many connections are
// open. Open and close connections to ws://127.0.0.1:PORT/ws while reading its resident memory.
//
// UPGRADE=router (the default) upgrades through the router (`router.ws`), as Hummingbird's
// documentation shows; UPGRADE=closure through `.http1WebSocketUpgrade(shouldUpgrade:)`, which
// takes no request context. The first keeps every connection's request context for good (see
// README.md); the second keeps nothing.
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Synchronization

let open = Atomic<Int>(0)
let environment = ProcessInfo.processInfo.environment
let port = environment["PORT"].flatMap(Int.init) ?? 8080
let webSocket = WebSocketServerConfiguration(
    autoPing: environment["AUTOPING"] == "off"
        ? .disabled : .enabled(timePeriod: .seconds(environment["AUTOPING"].flatMap(Int64.init) ?? 30)),
    closeTimeout: .seconds(2)
)

/// Reads a connection until the client closes it.
@Sendable func serve(_ inbound: WebSocketInboundStream) async throws {
    open.add(1, ordering: .relaxed)
    defer { open.subtract(1, ordering: .relaxed) }
    for try await _ in inbound {}
}

if environment["UPGRADE"] == "closure" {
    let router = Router()
    router.get("/stats") { _, _ in "{\"subscribers\":\(open.load(ordering: .relaxed))}" }
    let app = Application(
        router: router,
        server: .http1WebSocketUpgrade(configuration: .init(ws: webSocket)) { request, _, _ in
            guard request.path == "/ws" else { return .dontUpgrade }
            return .upgrade([:]) { inbound, _, _ in try await serve(inbound) }
        },
        configuration: .init(address: .hostname("127.0.0.1", port: port))
    )
    try await app.runService()
} else {
    let router = Router(context: BasicWebSocketRequestContext.self)
    router.get("/stats") { _, _ in "{\"subscribers\":\(open.load(ordering: .relaxed))}" }
    router.ws("/ws") { inbound, _, _ in try await serve(inbound) }
    let app = Application(
        router: router,
        server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: webSocket)),
        configuration: .init(address: .hostname("127.0.0.1", port: port))
    )
    try await app.runService()
}
