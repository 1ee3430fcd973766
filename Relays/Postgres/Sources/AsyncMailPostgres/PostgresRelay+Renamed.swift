import AsyncMailRelay
import CoreMetrics

// Names that changed, kept so that old code fails with the new name in the message.
extension PostgresRelay.Configuration {
    @available(*, unavailable, renamed: "retryBackoff", message: "renamed retryBackoff, the SQLite relay's name")
    public var reconnectBackoff: ClosedRange<Duration> {
        get { retryBackoff }
        set { retryBackoff = newValue }
    }

    @available(
        *,
        unavailable,
        message: "reconnectBackoff: is renamed retryBackoff:, the SQLite relay's name; pass retryBackoff: instead"
    )
    public init(
        channel: RelayChannel,
        mode: PostgresRelay.Mode = .durable(),
        table: String = "asyncmail_relay",
        maximumMailBytes: Int = 1 << 20,
        maximumPostBytes: Int = 16 << 20,
        outboundQueueLimit: Int = 10_000,
        heartbeatInterval: Duration = .seconds(1),
        reconnectBackoff: ClosedRange<Duration>,
        authenticationKey: RelayKey? = nil,
        metricsFactory: (any MetricsFactory)? = nil,
        presence: PostgresRelay.Presence? = nil
    ) {
        self.init(
            channel: channel,
            mode: mode,
            table: table,
            maximumMailBytes: maximumMailBytes,
            maximumPostBytes: maximumPostBytes,
            outboundQueueLimit: outboundQueueLimit,
            heartbeatInterval: heartbeatInterval,
            retryBackoff: reconnectBackoff,
            authenticationKey: authenticationKey,
            metricsFactory: metricsFactory,
            presence: presence
        )
    }
}
