@_spi(AsyncMailInternal) import AsyncMail
import Foundation
@_spi(AsyncMailRelay) import RelayWire

/// The half of a relay that every engine shares: it takes a mailroom's relayable posts into the
/// outbound queue, and delivers what the engine received into the mailroom, marked so that it
/// never goes out again.
///
/// Every relay has one (``RelayParts``). While it runs, ``RelayRunner`` calls ``open(into:)``
/// first and ``close()`` last, runs ``forward(_:)`` and the publish loop over ``takeQueued()``;
/// the engine gives what it reads to ``deliver(_:sender:positions:)``.
@_spi(AsyncMailRelay)
public final class MailCarrier: Sendable {
    public let mailroom: Mailroom
    public let registry: WireRegistry
    public let gate: TapGate
    public let queue: OutboundQueue
    public let reporter: RelayReporter
    /// The largest encoded mail, and the largest post, the relay publishes.
    public let mailLimit: Int
    public let postLimit: Int
    /// The destination's name in spans: a channel's, a database file's.
    public let destination: String
    /// `messaging.system` in spans and metrics.
    public let system: String
    /// What an asynchronous post of a relayed type does while the queue is full.
    public let backpressure: OutboundBackpressure
    /// The key of the mailroom admission that holds posts while the queue is full.
    private let admission = Guarded<Int?>(nil)
    /// The error the relay stopped on, for `flush()` to name (see ``stopped(by:)``).
    private let stopReason = Guarded<String?>(nil)

    /// What marks this relay's own deliveries (see ``RelayInbound``).
    private final class Mark: Sendable {}
    private let mark = Mark()
    private var relayID: ObjectIdentifier { ObjectIdentifier(mark) }

    public init(
        mailroom: Mailroom,
        registry: WireRegistry,
        queueLimit: Int,
        reporter: RelayReporter,
        mailLimit: Int,
        postLimit: Int,
        destination: String,
        system: String,
        backpressure: OutboundBackpressure = .wait(atMost: .seconds(30))
    ) {
        self.mailroom = mailroom
        self.registry = registry
        self.queue = OutboundQueue(limit: queueLimit)
        self.gate = TapGate(backlogLimit: queueLimit)
        self.reporter = reporter
        self.mailLimit = mailLimit
        self.postLimit = max(postLimit, mailLimit)
        self.destination = destination
        self.system = system
        self.backpressure = backpressure
    }

    /// Starts taking posts: taps the mailroom into `posts` (see ``tap(into:)``), opens the gate,
    /// routes the types with shared positions here (``startRouting(into:)``), and makes
    /// asynchronous posts of relayed types wait while the queue is full (``backpressure``).
    ///
    /// Returns the tap, which ends when the mailroom closes. Call ``close()`` when the relay
    /// stops, whatever happened in between.
    public func open(into posts: AsyncStream<[PostedMail]>.Continuation) async -> AsyncStream<PostedMail> {
        let tap = await tap(into: posts)
        gate.open()
        startRouting(into: posts)
        if let limit = backpressure.waitLimit {
            let (gate, registry, relayID) = (gate, registry, relayID)
            let key = mailroom._admitPosts { type, sender, post in
                // Mail this relay received, and mail it cannot carry, never waits for its queue.
                guard RelayInbound.relay != relayID, registry.relays(type, from: sender),
                    let reservation = await gate.reserve(waitingAtMost: limit)
                else {
                    return await post()
                }
                defer { gate.settle(reservation) }
                return await TapGate.$reservations.withValue(TapGate.reservations + [reservation]) {
                    await post()
                }
            }
            admission.withLock { $0 = key }
        }
        return tap
    }

    /// Stops taking posts: posts wait no longer, the types with shared positions are delivered
    /// here again, and every flush still waiting, queued or not, is told that the relay stopped.
    public func close() {
        if let key = admission.withLock({ $0.take() }) { mailroom._stopAdmitting(key) }
        stopRouting()
        for ticket in gate.close() { ticket.resolve(.notRunning) }
        queue.close()
        queue.abandon()
    }

    /// The relay is stopping on `error`, which `run()` throws: a `flush()` from now on, and one
    /// waiting, names it instead of saying only that the relay is not running. Call it as soon as
    /// the error is known, before the flushes waiting are resolved.
    public func stopped(by error: any Error) {
        stopReason.withLock { $0 = $0 ?? String(describing: error) }
    }

    /// Everything queued, for the publisher to write, waiting for something if nothing is; nil
    /// once the queue is closed and empty. The room it frees lets waiting posts in.
    public func takeQueued() async -> [OutboundQueue.Item]? {
        guard let items = await queue.takeAll() else { return nil }
        gate.taken(OutboundQueue.mailCount(of: items))
        return items
    }

    /// Taps the mailroom: each relayable post it admits goes to `posts` whole, as one element, in
    /// the mailroom's one order. Mail this relay delivered carries its mark, so it is never sent
    /// back out; mail that can never travel is never buffered. The filter runs at post time, so
    /// the gate counts exactly what ``forward(_:)`` will take.
    ///
    /// One element a post, not a mail: the forwarding loop is then woken once a post, where a
    /// wake-up a mail cost the writer more than encoding. The filter sees a post's mails one
    /// after another with no other post between them (the mailroom's taps hold a lane for a
    /// whole post), so it gathers them until the post's last.
    ///
    /// The returned stream ends when the mailroom closes: nothing more will be posted.
    private func tap(into posts: AsyncStream<[PostedMail]>.Continuation) async -> AsyncStream<PostedMail> {
        let (relayID, registry, gate) = (relayID, registry, gate)
        let gathered = Guarded<(mails: [PostedMail], refused: Bool)>(([], false))  // the post in progress
        return await mailroom.tap(where: { posted in
            if RelayInbound.relay != relayID, registry.canRelay(posted, fleetWide: false) {
                let admitted = gate.admit(endingPost: posted.isLastInPost)
                gathered.withLock { post in
                    if admitted { post.mails.append(posted) } else { post.refused = true }
                }
            }
            if posted.isLastInPost {
                let (post, refused) = gathered.withLock { post in
                    defer { post = ([], false) }
                    return post
                }
                if !post.isEmpty {
                    posts.yield(post)
                } else if refused, gate.needsWakeForRefusals() {
                    posts.yield([])  // wakes the forwarding loop to report it
                }
            }
            return false  // the tap only keeps the filter registered, and ends with the mailroom
        })
    }

    /// Makes the mailroom hand every post of a type with shared positions to `posts`, whole, in
    /// the order every tap hears posts, instead of delivering it; the gate admits it as it admits
    /// tapped mail. The engine delivers it once it reads it back, with the shared position.
    private func startRouting(into posts: AsyncStream<[PostedMail]>.Continuation) {
        let (relayID, registry, gate) = (relayID, registry, gate)
        let route: @Sendable ([PostedMail]) -> Bool = { mails in
            // Mail this relay delivers is never routed back (a row written without positions).
            guard RelayInbound.relay != relayID, let first = mails.first, registry.canRelay(first, fleetWide: true)
            else {
                return false
            }
            // The gate admits a post whole or refuses it whole.
            var admitted: [PostedMail] = []
            for mail in mails where gate.admit(endingPost: mail.isLastInPost, routed: true) { admitted.append(mail) }
            if admitted.isEmpty {
                if gate.needsWakeForRefusals() { posts.yield([]) }  // wakes the forwarding loop to report it
                return false
            }
            posts.yield(admitted)
            return true
        }
        for codec in registry.fleetWideCodecs { codec.route(mailroom, route) }
    }

    /// Delivers the types with shared positions here at once again, with positions of the
    /// mailroom's own.
    private func stopRouting() {
        for codec in registry.fleetWideCodecs { codec.route(mailroom, nil) }
    }

    /// Encodes tapped mail of registered types and queues it, a batch as one post, until a
    /// graceful shutdown or cancellation; queues each flush's marker behind the mail posted
    /// before it.
    public func forward(_ tap: AsyncStream<[PostedMail]>) async {
        var pending: OutboundPost?
        var pendingMails = 0  // every mail of the post in progress, sent or not
        var tooLarge = false  // the post in progress outgrew `postLimit`: it stays local, whole
        // The codec of the post in progress, and the envelope's size without its mails: the rest
        // of its mails are of the same type from the same sender, so only their text is new.
        var pendingCodec: (codec: WireRegistry.MailCodec, overhead: Int)?
        let encoder = MailEncoder()  // one for the loop's life, keeping its buffers
        defer { reportRefused(gate.takeRefusedPosts()) }  // refused after the last wake-up, as the loop stops
        for await mails in tap {
            if mails.isEmpty {  // a post was refused: report it now
                reportRefused(gate.takeRefusedPosts())
                continue
            }
            for posted in mails {
                pendingMails += 1
                do {
                    // A later mail of the post needs only its text; its first, the post around it.
                    let encoded: (text: [UInt8], codec: WireRegistry.MailCodec, overhead: Int, first: OutboundPost?)?
                    if pending != nil, let (codec, overhead) = pendingCodec {
                        encoded = (try codec.encode(posted.mail, encoder), codec, overhead, nil)
                    } else {
                        encoded = try registry.encode(posted, with: encoder).map { post, codec in
                            (post.body, codec, post.overheadBytes, post)
                        }
                    }
                    if let (text, codec, overhead, first) = encoded {
                        if text.count + overhead > mailLimit {
                            gate.lose(1)
                            reporter.report(.oversize(type: codec.name, bytes: text.count)) {
                                $0.oversize.addSaturating(1)
                            }
                        } else if tooLarge || (pending?.mailBytes ?? 0) + text.count + overhead > postLimit {
                            tooLarge = true
                            pending = nil
                        } else if var first {
                            // The post's first mail: its context is the whole post's.
                            first.context = posted.context
                            first.trace = RelayTracing.trace(of: posted.context)
                            pendingCodec = (codec, overhead)
                            pending = first
                        } else {
                            pending?.append(mail: text)
                        }
                    }
                } catch {
                    gate.lose(1)
                    reporter.report(.publishFailed(reason: "encoding failed: \(error)", mails: 1)) {
                        $0.publishFailures += 1
                    }
                }
                if posted.isLastInPost {
                    if tooLarge {
                        gate.lose(pendingMails)
                        let type = registry.mailCodec(for: posted.mailType)?.name ?? posted.typeName
                        reporter.report(.oversize(type: type, bytes: postLimit)) {
                            $0.oversize.addSaturating(pendingMails)
                        }
                    } else if var post = pending {
                        post.queuedAt = .now
                        // Counted before it is queued, so that the publisher's take never comes first,
                        // and before its last mail counts as forwarded, so that what the gate holds never dips.
                        gate.enqueued(post.mailCount)
                        if queue.append(.post(post)) {
                            reporter.count { $0.queued += post.mailCount }
                        } else {
                            gate.taken(post.mailCount)
                            gate.lose(post.mailCount)
                            reporter.report(.queueOverflow(posts: 1)) { $0.queueOverflow += 1 }
                        }
                    }
                    pending = nil
                    pendingCodec = nil
                    pendingMails = 0
                    tooLarge = false
                }
                let progress = gate.forwardedOne()
                reportRefused(progress.refusedPosts)
                for ticket in progress.matured where !queue.append(.flush(ticket)) { ticket.resolve(.notRunning) }
                if progress.isDone { return }  // shutting down, and all is forwarded
            }
        }
    }

    /// Reports posts the gate refused (the queue full past the backpressure's wait), if any.
    private func reportRefused(_ posts: Int) {
        guard posts > 0 else { return }
        reporter.report(.queueOverflow(posts: posts)) { $0.queueOverflow += posts }
    }

    /// Registers a flush: it returns once everything posted before it has been through the
    /// queue and written, the engine resolving its ticket. See an engine's `flush()`.
    public func flush() async throws {
        let ticket = FlushTicket()
        let (registration, lostBefore) = gate.register(ticket)
        switch registration {
        case .notRunning: throw notRunning
        case .queueNow: if !queue.append(.flush(ticket)) { ticket.resolve(.notRunning) }
        case .waiting: break  // the forwarding loop queues it
        }
        let outcome = await withTaskCancellationHandler {
            await ticket.wait()
        } onCancel: {
            ticket.resolve(.cancelled)
        }
        switch outcome {
        case .passed:
            let lost = gate.settleFlush(since: lostBefore)
            if lost > 0 { throw RelayError.notRelayed(mails: lost) }
        case .notRunning: throw notRunning
        case .cancelled: throw CancellationError()
        }
    }

    /// What `flush()` throws when the relay is not running: the error it stopped on, if any.
    private var notRunning: RelayError {
        stopReason.withLock { $0 }.map { RelayError.stopped(reason: $0) } ?? .notRunning
    }

    /// Runs `publish`, one statement writing `posts`, inside a producer span linked to each
    /// post's context (see ``RelayTracing``), and records each post's time in the queue.
    public func publishing<Result>(_ posts: [OutboundPost], _ publish: () async throws -> Result) async throws -> Result
    {
        let result = try await RelayTracing.publishing(posts, destination: destination, system: system, publish)
        let now = ContinuousClock.now
        for post in posts {
            if let queuedAt = post.queuedAt { reporter.metrics.publishTook(now - queuedAt) }
        }
        return result
    }

    /// Delivers a received post into the mailroom, marked as this relay's, inside a consumer
    /// span, and counts it.
    ///
    /// With `positions` (a row's of a type with shared positions) the post is delivered with
    /// them; with their `live` false it is only kept in the type's history.
    public func deliver(
        _ post: InboundPost,
        sender: (any Hashable & Sendable)?,
        positions: (epoch: UInt64, first: UInt64, live: Bool)? = nil
    ) async {
        if let positions, !positions.live {
            _ = post.postPositioned(mailroom, sender, positions.epoch, positions.first, false)
            return
        }
        // Counted first, so that whoever sees the mail sees it counted; this relay's own mail,
        // read back to be delivered here, was not received from anyone.
        if !post.isOwn { reporter.count { $0.received.addSaturating(post.count) } }
        let (mailroom, relayID) = (mailroom, relayID)
        await RelayTracing.receiving(post, destination: destination, system: system) {
            await RelayInbound.$relay.withValue(relayID) {
                if let positions {
                    _ = post.postPositioned(mailroom, sender, positions.epoch, positions.first, true)
                } else {
                    _ = await post.post(mailroom, sender)
                }
            }
        }
        if let sentAt = post.sentAt, !post.isOwn {
            reporter.metrics.receivedAfter(milliseconds: OutboundPost.now() - sentAt)
        }
    }
}
