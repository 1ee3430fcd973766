import AsyncMail
import Foundation

// The timed shapes, written once. package-benchmark's suite brackets the timed part with its
// start and stop; `Probe` brackets it with a clock so that it can interleave shapes.
//
// The generic shapes are `@inlinable` so that each executable specialises them for its sequence
// type. Unspecialised, their loops looked up generic metadata on every element: 15% of a paced
// sample's time, the same on every side of a ratio, which pulled every ratio towards 1.

/// Brackets the timed part of a shape: package-benchmark's start and stop, or a clock.
public typealias Measure = (_ timedPart: () async -> Void) async -> Void

/// Runs `shape` with a clock around its timed part and returns how long that part took.
public func timed(_ shape: (Measure) async -> Void) async -> Duration {
    var elapsed = Duration.zero
    await shape { timedPart in
        let start = ContinuousClock.now
        await timedPart()
        elapsed = ContinuousClock.now - start
    }
    return elapsed
}

// MARK: Delivery

/// Times ``mailPerSample`` mails sent with `send` until another task has consumed them all.
@inlinable
public func steady<S: AsyncSequence & Sendable>(
    consuming sequence: S,
    measure: Measure,
    send: @escaping (Int) async -> Void
) async where S.Element: Sendable {
    let consumer = Task { await drain(sequence, expecting: mailPerSample) }
    await measure {
        for value in 0..<mailPerSample { await send(value) }
        await consumer.value
    }
}

/// Times ``mailPerSample`` mails sent with `send`, waiting for the consumer in another task to
/// acknowledge every ``pacedWindow``: no implementation ever holds more than that many.
@inlinable
public func paced<S: AsyncSequence & Sendable>(
    consuming sequence: S,
    measure: Measure,
    send: @escaping (Int) async -> Void
) async where S.Element: Sendable {
    let (acks, ack) = AsyncStream.makeStream(of: Void.self)
    let consumer = Task { await acknowledge(sequence, every: pacedWindow, into: ack) }
    var pending = acks.makeAsyncIterator()
    await measure {
        for value in 0..<mailPerSample {
            await send(value)
            if (value + 1) % pacedWindow == 0 { await pending.next() }
        }
    }
    consumer.cancel()
}

/// The steady shape through Foundation's `messages(of:for:)`; returns how many of the
/// ``mailPerSample`` mails the consumer actually received (it keeps only the newest ten).
public func steadyMessages(measure: Measure) async -> Int {
    let center = NotificationCenter()
    let sequence = center.messages(of: AnyObject.self, for: .beat)
    let listening = Flag()
    let consumer = Task {
        var received = 0
        for await message in sequence {
            if message.value < 0 { listening.isSet.store(true, ordering: .releasing) }
            if message.value == Int.max { break }
            if message.value >= 0 { received += 1 }
        }
        return received
    }
    await waitUntilListening(center, listening)
    var received = 0
    await measure {
        for value in 0..<mailPerSample { center.post(BeatMessage(value: value)) }
        // The end marker is posted last, so it is among the newest ten and always arrives.
        center.post(BeatMessage(value: .max))
        received = await consumer.value
    }
    return received
}

/// The paced shape through Foundation's `messages(of:for:)`, which stays inside its buffer
/// here and so delivers everything.
public func pacedMessages(measure: Measure) async {
    let center = NotificationCenter()
    let sequence = center.messages(of: AnyObject.self, for: .beat)
    let listening = Flag()
    let (acks, ack) = AsyncStream.makeStream(of: Void.self)
    let consumer = Task {
        var received = 0
        for await message in sequence {
            if message.value < 0 {
                listening.isSet.store(true, ordering: .releasing)
                continue
            }
            received += 1
            if received % pacedWindow == 0 { ack.yield() }
        }
    }
    await waitUntilListening(center, listening)
    var pending = acks.makeAsyncIterator()
    await measure {
        for value in 0..<mailPerSample {
            center.post(BeatMessage(value: value))
            if (value + 1) % pacedWindow == 0 { await pending.next() }
        }
    }
    consumer.cancel()
}

/// Foundation delivers nothing posted before iteration starts: post markers until one arrives.
private func waitUntilListening(_ center: NotificationCenter, _ listening: Flag) async {
    while !listening.isSet.load(ordering: .acquiring) {
        center.post(BeatMessage(value: -1))
        await Task.yield()
    }
}

/// Times ``fanOutDeliveries`` deliveries spread over `subscribers` consumers, one task each,
/// so the time is directly the cost per delivery.
public func fanOut(to subscribers: Int, measure: Measure) async {
    let posts = fanOutDeliveries / subscribers
    let mailroom = Mailroom()
    var consumers: [Task<Void, Never>] = []
    for _ in 0..<subscribers {
        let stream = await mailroom.subscribe(to: Beat.self)
        consumers.append(Task { await drain(stream, expecting: posts) })
    }
    await measure {
        for value in 0..<posts { await mailroom.post(Beat(value: value)) }
        for consumer in consumers { await consumer.value }
    }
}

// MARK: Post cost

/// Who a post-cost shape's mail comes from, and so which route it takes.
public enum Pin: Sendable {
    /// No sender: the subscription takes every `Beat`.
    case unpinned
    /// A sender value; the subscription is pinned to it.
    case value(Room)
    /// A sender object; the subscription is pinned to it.
    case object(Poster)

    /// The pin whose route a crowd of `kind` sits beside: other types for an unpinned post,
    /// other values for a value-pinned one, other objects for an object-pinned one.
    public init(beside kind: Crowd) {
        switch kind {
        case .types: self = .unpinned
        case .values: self = .value(Room(number: -1))
        case .objects: self = .object(Poster())
        }
    }
}

/// Times ``mailPerSample`` posts into a fresh subscription, pinned as `pin` says, that nobody reads.
///
/// The subscription keeps only the newest mail. An unbounded one grows AsyncStream's buffer to
/// 10,000 mails in every sample, and the page faults of that growth (AsyncStream's cost, the
/// same whatever the post does) were the noisiest part of the sample.
public func postCost(on mailroom: Mailroom, pinned pin: Pin, measure: Measure) async {
    let newest = AsyncStream<Beat>.Continuation.BufferingPolicy.bufferingNewest(1)
    let target: AsyncStream<Beat>
    switch pin {
    case .unpinned:
        target = await mailroom.subscribe(to: Beat.self, bufferingPolicy: newest)
    case .value(let room):
        target = await mailroom.subscribe(to: Beat.self, from: .only(room), bufferingPolicy: newest)
    case .object(let poster):
        target = await mailroom.subscribe(to: Beat.self, from: .only(poster), bufferingPolicy: newest)
    }
    await measure {
        switch pin {
        case .unpinned:
            for value in 0..<mailPerSample { await mailroom.post(Beat(value: value)) }
        case .value(let room):
            for value in 0..<mailPerSample { await mailroom.post(Beat(value: value), from: room) }
        case .object(let poster):
            for value in 0..<mailPerSample { await mailroom.post(Beat(value: value), from: poster) }
        }
    }
    withExtendedLifetime(target) {}
}

// MARK: Consumers

/// Consumes exactly `count` elements; a sequence that ends sooner is a broken benchmark.
@inlinable
public func drain<S: AsyncSequence & Sendable>(_ sequence: S, expecting count: Int) async where S.Element: Sendable {
    guard count > 0 else { return }
    var received = 0
    do {
        for try await _ in sequence {
            received += 1
            if received == count { return }
        }
    } catch {}
    fatalError("the sequence ended after \(received) of \(count) elements")
}

/// Consumes `sequence`, acknowledging every `window` elements, until cancelled.
@inlinable
func acknowledge<S: AsyncSequence & Sendable>(
    _ sequence: S,
    every window: Int,
    into ack: AsyncStream<Void>.Continuation
) async where S.Element: Sendable {
    var received = 0
    do {
        for try await _ in sequence {
            received += 1
            if received % window == 0 { ack.yield() }
        }
    } catch {}
}
