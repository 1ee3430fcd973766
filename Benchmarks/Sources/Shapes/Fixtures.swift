import AsyncMail
import Foundation
import Synchronization

// The mail, senders and sizes every benchmark shape uses, so that package-benchmark's suite and
// `Probe`'s interleaved ratios measure exactly the same work.

/// The mail of every shape.
public struct Beat: Mail {
    public let value: Int

    public init(value: Int) {
        self.value = value
    }
}

/// Foundation's typed notification carrying the same payload, for its baseline.
public struct BeatMessage: NotificationCenter.AsyncMessage {
    public typealias Subject = AnyObject
    public let value: Int

    public init(value: Int) {
        self.value = value
    }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<BeatMessage> {
    /// The identifier `messages(of:for:)` observes `BeatMessage` by.
    public static var beat: Self { .init() }
}

/// Distinct mail types without ten thousand declarations: nested fourteen deep (see ``Crowd``).
public struct Zero<T: Mail>: Mail {}
/// The other half of ``Zero``.
public struct One<T: Mail>: Mail {}

/// A `Hashable` sender value, like a room id.
public struct Room: Hashable, Sendable {
    public let number: Int

    public init(number: Int) {
        self.number = number
    }
}

/// An object sender, matched by identity.
public final class Poster: Sendable {
    public init() {}
}

/// A one-way signal between tasks.
public final class Flag: Sendable {
    public let isSet = Atomic(false)

    public init() {}
}

/// Mail per sample in the delivery and post-cost shapes.
@inlinable public var mailPerSample: Int { 10_000 }
/// Deliveries per sample in the fan-out shapes, whatever the subscriber count.
@inlinable public var fanOutDeliveries: Int { 100_000 }
/// Subscriptions that a post must not pay for.
@inlinable public var crowdSize: Int { 10_000 }
/// Mail in flight before the paced poster waits: below Foundation's ten-message buffer.
@inlinable public var pacedWindow: Int { 8 }
