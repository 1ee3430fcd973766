@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO

// Connections: each relay opens its own (one listens, one publishes, one at a time sets up the
// table), each call on them bounded by a deadline, and reconnects with backoff.
extension PostgresRelay {
    /// How long opening a connection or one publish may take before it is given up: ten
    /// heartbeats, at least 5 s.
    var callDeadline: Duration { max(configuration.heartbeatInterval * 10, .seconds(5)) }

    /// Opens a connection of this relay's own, or fails after `callDeadline`: a server that is
    /// starting up can accept the socket and then never finish the handshake.
    func connect() async throws -> PostgresConnection {
        let limit = callDeadline
        let opened = try await Deadline.run(limit) {
            try await PostgresConnection.connect(
                configuration: self.connectionConfiguration,
                id: 0,
                logger: self.logger
            )
        } late: { connection in
            try? await connection.close()
        }
        guard let opened else { throw ConnectTimedOut(limit: limit) }
        return opened
    }

    /// Closes a connection, waiting a second at most: closing one the server has dropped can
    /// hang too. Tried even when the caller is cancelled, so that no backend is left behind.
    func close(_ connection: PostgresConnection?) async {
        guard let connection else { return }
        _ = try? await Deadline.run(.seconds(1), cancellable: false) { try await connection.close() }
    }

    /// Runs `session` on one connection after another until cancelled: a connection that cannot
    /// be made, or a session that fails, is reported (`RelayEvent.disconnected(reason:)`, its
    /// reason after `what`) and tried again after the backoff. Each connection is closed after
    /// its session, however it ends.
    func reconnecting(what: String = "", _ session: (PostgresConnection) async throws -> Void) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                let connection = try await connect()
                attempt = 0
                do {
                    try await session(connection)
                } catch {
                    await close(connection)
                    throw error
                }
                await close(connection)
            } catch {
                guard !Task.isCancelled else { return }
                report(.disconnected(reason: what + Self.reason(error))) { $0.disconnects += 1 }
                attempt += 1
                guard await backoff(attempt: attempt) else { return }
            }
        }
    }

    /// Waits before reconnection attempt `attempt`: exponential from the lower bound, capped at
    /// the upper, with jitter so that a fleet does not reconnect in step. False when cancelled.
    func backoff(attempt: Int) async -> Bool {
        await AsyncMailRelay.backoff(attempt: attempt, within: configuration.retryBackoff)
    }

    /// Runs `body`, `what` the connection is asked; if it has not finished within `limit`, closes
    /// `connection` and throws, without waiting for `body` (see ``Deadline``).
    ///
    /// A connection found closed ends the wait at once (within ``Deadline/checkInterval``) with
    /// ``ConnectionClosed``: a postgres-nio call in flight when the server drops the connection
    /// can stay suspended for good, and then only the deadline would end it.
    ///
    /// - Parameter cancellable: Whether the caller's cancellation stops the wait at once; false
    ///   for a statement whose outcome must be known, which is then awaited up to `limit`.
    @discardableResult
    func withDeadline<Result: Sendable>(
        _ limit: Duration,
        for what: String,
        closing connection: PostgresConnection,
        marking unanswered: Unanswered,
        cancellable: Bool = true,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let closed: @Sendable () -> (any Error)? = { connection.isClosed ? ConnectionClosed(during: what) : nil }
        if let result = try await Deadline.run(limit, cancellable: cancellable, givingUp: closed, body) {
            return result
        }
        let noAnswer = NoAnswer(to: what, within: limit)
        unanswered.mark(noAnswer)
        await close(connection)
        throw noAnswer
    }
}

/// Opening a connection took longer than the relay allows.
struct ConnectTimedOut: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "no connection within \(limit)" }
}

/// The connection closed while a call on it was waiting for its answer.
struct ConnectionClosed: Error, CustomStringConvertible {
    let what: String

    init(during what: String) {
        self.what = what
    }

    var description: String { "the connection closed during \(what), before its answer came" }
}

/// Whether a call on a connection went unanswered, and which, so that the errors closing that
/// connection causes are reported as what they are: a connection that stopped answering.
final class Unanswered: Sendable {
    private let call = Guarded<NoAnswer?>(nil)

    /// The call that went unanswered, if one did.
    var noAnswer: NoAnswer? { call.withLock { $0 } }

    func mark(_ noAnswer: NoAnswer) {
        call.withLock { $0 = $0 ?? noAnswer }
    }
}

/// A connection did not answer in time: probably half-open, or stuck on a server that went away.
struct NoAnswer: Error, CustomStringConvertible {
    let what: String
    let limit: Duration

    init(to what: String, within limit: Duration) {
        self.what = what
        self.limit = limit
    }

    var description: String { "no answer to \(what) within \(limit): the connection is treated as lost" }
}
