import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of the chat server: Hummingbird's WebSocket context, plus the connection's
/// channel, so that a client that stopped reading can be dropped without a closing handshake.
struct ChatContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<ChatContext>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.channel = source.channel
    }
}
