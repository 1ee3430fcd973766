@_spi(AsyncMailInternal) import AsyncMail
import CoreMetrics
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire

/// What every engine's configuration holds, under the same names: ``RelayParts`` reads them.
@_spi(AsyncMailRelay) public protocol RelaySettings {
    var maximumMailBytes: Int { get }
    var maximumPostBytes: Int { get }
    var outboundQueueLimit: Int { get }
    var backpressure: OutboundBackpressure { get }
    var heartbeatInterval: Duration { get }
    /// How long the store keeps a row; also how long an origin's numbering is remembered.
    var retention: Duration { get }
    var authenticationKey: RelayKey? { get }
    var metricsFactory: (any MetricsFactory)? { get }
    var presence: RelayPresence? { get }
}

/// The parts every relay is made of, made once from the settings every engine shares: its
/// origin, its signer, its reporter (events, counters, logs, metrics), its carrier (forwarding,
/// the outbound queue, delivery), its presence, and the receiver that checks what it reads.
///
/// An engine's initialiser makes one and keeps its parts; what is left is the engine's own.
@_spi(AsyncMailRelay) public struct RelayParts: Sendable {
    /// This relay's identity on the wire; unique per relay instance.
    public let origin: String
    /// Signs what this relay publishes, when a key is set.
    public let signer: PayloadSigner?
    public let reporter: RelayReporter
    public let carrier: MailCarrier
    public let presence: PresenceKeeper
    /// Decides what each received payload means; keeps every origin's numbering.
    public let receiver: InboundReceiver

    /// - Parameters:
    ///   - system: `messaging.system` in spans and metrics, such as `asyncmail-sqlite`.
    ///   - destination: the destination's name in spans and metrics: a channel's, a file's.
    ///   - logged: the metadata that names the destination in every log line.
    ///   - scope: the presence tables' scope: a channel, a table.
    ///   - tick: how often the engine ticks the receiver's clock while reading: an origin is
    ///     forgotten after the retention of reading without mail from it.
    ///   - followsSpillNotices: whether a payload may name a row to read instead.
    public init(
        mailroom: Mailroom,
        settings: some RelaySettings,
        system: String,
        destination: String,
        logger: Logger,
        logged: (key: String, value: String),
        scope: String,
        tick: Duration,
        followsSpillNotices: Bool = false
    ) {
        let origin = UUID().uuidString.lowercased()
        self.origin = origin
        self.signer = settings.authenticationKey?.signer
        var logger = logger
        logger[metadataKey: logged.key] = "\(logged.value)"
        logger[metadataKey: "relay.origin"] = "\(origin.prefix(8))"
        self.reporter = RelayReporter(
            metrics: RelayMetrics(factory: settings.metricsFactory, system: system, destination: destination),
            logger: logger
        )
        self.carrier = MailCarrier(
            mailroom: mailroom,
            registry: WireRegistry(),
            queueLimit: settings.outboundQueueLimit,
            reporter: reporter,
            mailLimit: settings.maximumMailBytes,
            postLimit: settings.maximumPostBytes,
            destination: destination,
            system: system,
            backpressure: settings.backpressure
        )
        self.presence = PresenceKeeper(
            settings: settings.presence,
            heartbeat: settings.heartbeatInterval,
            scope: scope,
            origin: origin,
            signer: signer,
            reporter: reporter
        )
        let ticks = settings.retention / max(tick, .milliseconds(1))
        self.receiver = InboundReceiver(
            registry: carrier.registry,
            signer: signer,
            ownOrigin: origin,
            followsSpillNotices: followsSpillNotices,
            forgetAfter: Int(min(max(ticks.rounded(.up), 1), 1e9))
        )
    }
}
