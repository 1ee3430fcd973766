@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Ephemeral mode: queues a heartbeat every interval until the queue closes.
    func beat() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.heartbeatInterval) } catch { return }
            guard queue.append(.heartbeat) else { return }
        }
    }
}
