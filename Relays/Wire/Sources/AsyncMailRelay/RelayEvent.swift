@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

/// Something a relay did or met, for monitoring; every event is also logged and counted in
/// ``RelayCounters``.
///
/// Switch over ``code``; codes may be added in any release, so such a `switch` keeps a
/// `default`. Each event compares equal to the one made by the factory of the same name:
///
/// ```swift
/// for await event in relay.events() {
///     switch event.code {
///     case .gap: alert("lost \(event.mails ?? 0) mails from \(event.origin ?? "?")")
///     case .rejected: securityLog.append(event.description)
///     default: break
///     }
/// }
/// ```
public struct RelayEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened. A struct rather than an enum, so that a code added later breaks no one's
    /// `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable {
            case listening, disconnected, gap, publishFailed, oversize, unknownType, decodeFailed, queueOverflow
            case rejected, expired, presenceExpired
        }

        let base: Base

        /// The listening connection is up and `LISTEN` is in place.
        public static let listening = Code(base: .listening)
        /// A connection was lost or could not be made (``RelayEvent/reason``).
        public static let disconnected = Code(base: .disconnected)
        /// ``RelayEvent/mails`` mails from ``RelayEvent/origin`` never arrived.
        public static let gap = Code(base: .gap)
        /// Publishing ``RelayEvent/mails`` mails failed (``RelayEvent/reason``).
        public static let publishFailed = Code(base: .publishFailed)
        /// A mail of ``RelayEvent/wireName``, ``RelayEvent/bytes`` long, was too large to relay.
        public static let oversize = Code(base: .oversize)
        /// Mail of a wire name this process has not registered (``RelayEvent/wireName``) was skipped.
        public static let unknownType = Code(base: .unknownType)
        /// Mail of ``RelayEvent/wireName`` did not decode (``RelayEvent/reason``) and was skipped.
        public static let decodeFailed = Code(base: .decodeFailed)
        /// The outbound queue was full, so ``RelayEvent/posts`` posts were not relayed.
        public static let queueOverflow = Code(base: .queueOverflow)
        /// A received payload was not one a relay sends, and was dropped (``RelayEvent/reason``).
        public static let rejected = Code(base: .rejected)
        /// Durable mode: ``RelayEvent/mails`` mails were deleted by the retention before this
        /// relay read them.
        public static let expired = Code(base: .expired)
        /// Presence: the instance ``RelayEvent/origin`` stopped beating, and its
        /// ``RelayEvent/entries`` entries were removed.
        public static let presenceExpired = Code(base: .presenceExpired)

        public var description: String {
            switch base {
            case .listening: "listening"
            case .disconnected: "disconnected"
            case .gap: "gap"
            case .publishFailed: "publishFailed"
            case .oversize: "oversize"
            case .unknownType: "unknownType"
            case .decodeFailed: "decodeFailed"
            case .queueOverflow: "queueOverflow"
            case .rejected: "rejected"
            case .expired: "expired"
            case .presenceExpired: "presenceExpired"
            }
        }
    }

    /// What happened.
    public let code: Code
    /// Why, in words (``Code/disconnected``, ``Code/publishFailed``, ``Code/decodeFailed``,
    /// ``Code/rejected``).
    public let reason: String?
    /// The process whose mail went missing (``Code/gap``).
    public let origin: String?
    /// The wire name of the mail type concerned (``Code/oversize``, ``Code/unknownType``,
    /// ``Code/decodeFailed``).
    public let wireName: String?
    /// How many mails: missing (``Code/gap``), or not published (``Code/publishFailed``).
    public let mails: Int?
    /// How many posts were not relayed (``Code/queueOverflow``).
    public let posts: Int?
    /// The size of a mail too large to relay (``Code/oversize``).
    public let bytes: Int?
    /// How many presence entries were removed (``Code/presenceExpired``).
    public let entries: Int?

    private init(
        _ code: Code,
        reason: String? = nil,
        origin: String? = nil,
        wireName: String? = nil,
        mails: Int? = nil,
        posts: Int? = nil,
        bytes: Int? = nil,
        entries: Int? = nil
    ) {
        self.code = code
        self.reason = reason
        self.origin = origin
        self.wireName = wireName
        self.mails = mails
        self.posts = posts
        self.bytes = bytes
        self.entries = entries
    }

    /// The listening connection is up and `LISTEN` is in place (after the first connect and after
    /// every reconnect). In durable mode, what was missed meanwhile has been caught up.
    public static let listening = RelayEvent(.listening)

    /// A connection was lost or could not be made; the relay reconnects with backoff.
    public static func disconnected(reason: String) -> RelayEvent {
        RelayEvent(.disconnected, reason: reason)
    }

    /// Mail from `origin` never arrived: exactly `missing` mails, known from the origin's
    /// numbering. Ephemeral mode: lost in transit (a disconnect, a failed publish, a spilled
    /// row read too late). Durable mode: deleted by the retention before this relay read it.
    public static func gap(origin: String, missing: Int) -> RelayEvent {
        RelayEvent(.gap, origin: origin, mails: missing)
    }

    /// Publishing failed; durable mode retries the same mail after reconnecting, ephemeral mode
    /// drops it and says how many mails that was.
    public static func publishFailed(reason: String, mails: Int) -> RelayEvent {
        RelayEvent(.publishFailed, reason: reason, mails: mails)
    }

    /// A mail larger than the relay's `Configuration.maximumMailBytes` was not relayed (it was
    /// still delivered locally).
    public static func oversize(type wireName: String, bytes: Int) -> RelayEvent {
        RelayEvent(.oversize, wireName: wireName, bytes: bytes)
    }

    /// Received mail of a wire name this process has not registered (a rolling deploy); skipped.
    public static func unknownType(_ wireName: String) -> RelayEvent {
        RelayEvent(.unknownType, wireName: wireName)
    }

    /// Received mail that did not decode as its registered type; skipped.
    public static func decodeFailed(type wireName: String, reason: String) -> RelayEvent {
        RelayEvent(.decodeFailed, reason: reason, wireName: wireName)
    }

    /// The outbound queue was full, so this many posts were not relayed.
    public static func queueOverflow(posts: Int) -> RelayEvent {
        RelayEvent(.queueOverflow, posts: posts)
    }

    /// A received payload was not one a relay sends, and was dropped: not JSON or the wrong
    /// shape, a number or count out of range or inconsistent, a signature that does not verify
    /// (with the relay's `Configuration.authenticationKey` set), a spill notice whose row
    /// does not match it, or a row larger than the relay's `Configuration.maximumPostBytes`.
    /// Anything that can `NOTIFY` on the channel, or write the table, can send such a payload.
    public static func rejected(reason: String) -> RelayEvent {
        RelayEvent(.rejected, reason: reason)
    }

    /// Durable mode: exactly `mails` mails were deleted by the retention before this relay read
    /// them, known from the channel's numbering the moment the relay reads past them or comes
    /// back, whether or not their senders post again. Counted in ``RelayCounters/missing``.
    public static func expired(mails: Int) -> RelayEvent {
        RelayEvent(.expired, mails: mails)
    }

    /// Presence: the instance `instance` (its `origin`) wrote no heartbeat for
    /// the presence expiry less two heartbeats, so this relay removed its `entries` entries from
    /// every list (they are gone within the expiry). Reported
    /// by the one instance that removed them; counted in ``RelayCounters/presenceExpired``.
    public static func presenceExpired(instance: String, entries: Int) -> RelayEvent {
        RelayEvent(.presenceExpired, origin: instance, entries: entries)
    }

    /// What happened, and what the relay does about it or what an operator can.
    public var description: String {
        let reason = reason ?? ""
        let wireName = wireName ?? ""
        return switch code.base {
        case .listening: "listening"
        case .disconnected: "disconnected: \(reason); reconnecting with backoff"
        case .gap: "gap: \(counting(mails ?? 0, "mail")) from \(origin ?? "?") lost"
        case .publishFailed: "publishing \(counting(mails ?? 0, "mail")) failed: \(reason)"
        case .oversize:
            "oversize: a \(wireName) of \(counting(bytes ?? 0, "byte")) was not relayed (delivered here only); "
                + "raise maximumMailBytes or send less"
        case .unknownType: "unknown wire type \"\(wireName)\" skipped: register it in this process"
        case .decodeFailed: "a \(wireName) failed to decode and was skipped: \(reason)"
        case .queueOverflow:
            "outbound queue full: \(counting(posts ?? 0, "post")) not relayed; the database is slower than the posts"
        case .rejected: "rejected a received payload: \(reason)"
        case .expired:
            "expired: \(counting(mails ?? 0, "mail")) \(mails == 1 ? "was" : "were") deleted by the retention before this relay read them; "
                + "raise the retention or keep the relay connected"
        case .presenceExpired:
            "presence: instance \(origin ?? "?") stopped beating; its \(counting(entries ?? 0, "entry", plural: "entries")) \(entries == 1 ? "was" : "were") removed"
        }
    }
}
