@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire
import ServiceLifecycle

/// Every engine's `run()`: one task group whose children each return what they ended with, and
/// one loop that hands each result to a ``RelayLifecycleMachine`` and does the actions it
/// returns (the shape of swift-service-lifecycle's `ServiceGroup`).
///
/// The children: a watcher of the mailroom (it closed), a watcher of graceful shutdown and
/// cancellation, the forwarding loop, the store's opening, and once it is open the publisher
/// (``MailCarrier/publish(policy:backoff:prepare:write:failed:)``) and the engine's readers.
///
/// - Graceful shutdown: posts stop being admitted, what was admitted before is forwarded and
///   published, then the readers stop and the store closes; `run()` returns.
/// - Cancellation: the same steps, with every child cancelled, so none starts new work; what
///   was still queued is reported as a failed publish.
/// - Failure (the store cannot be opened, a reader gives up): forwarding and the publisher stop
///   at once, flushes name the error, the store closes, and `run()` throws it.
///
/// Whatever happened, the carrier is closed (every waiting flush told), presence ended and the
/// event streams finished before `run()` returns.
@_spi(AsyncMailRelay) public struct RelayRunner<Engine: RelayEngine>: Sendable {
    /// The engine the relay runs on.
    @_spi(AsyncMailRelay) public let engine: Engine

    @_spi(AsyncMailRelay) public init(engine: Engine) {
        self.engine = engine
    }

    /// What a child of the run ended with.
    private enum ChildResult: Sendable {
        case mailroomClosed
        case shutdownRequested
        case forwardingEnded
        case opened(Engine.Store)
        case openFailed(any Error)
        case publisherEnded
        case readerEnded(failing: (any Error)?)
    }

    /// Runs the relay until a graceful shutdown, cancellation or a failure.
    ///
    /// - Throws: what ``RelayEngine/open()`` threw, or what a reader gave up on.
    @_spi(AsyncMailRelay) public func run() async throws {
        let (engine, carrier) = (engine, engine.carrier)
        // What the forwarding loop takes, in the mailroom's one order: tapped posts, and posts of
        // types with shared positions, which the mailroom routes here instead of delivering.
        // Bounded by the gate, which admits a post only while the backlog allows.
        let (posts, postsContinuation) = AsyncStream.makeStream(of: [PostedMail].self)
        let tap = await carrier.open(into: postsContinuation)
        defer {
            carrier.close()
            postsContinuation.finish()
            engine.presence.end()  // also when opening failed; a clean close has removed its entries first
            carrier.reporter.finish()
        }
        let (forwarding, publishing, reading) = (StopSignal(), StopSignal(), StopSignal())
        let failure = await withTaskGroup(of: ChildResult.self, returning: (any Error)?.self) { group in
            group.addTask {
                for await _ in tap {}
                return .mailroomClosed
            }
            group.addTask {
                try? await gracefulShutdown()  // or cancelled
                return .shutdownRequested
            }
            group.addTask {
                // From the first post, so that the outbound bound holds while the store opens.
                await forwarding.run { await carrier.forward(posts) }
                return .forwardingEnded
            }
            group.addTask {
                do { return .opened(try await engine.open()) } catch { return .openFailed(error) }
            }
            var machine = RelayLifecycleMachine()
            var store: Engine.Store?
            while let result = await group.next() {
                var actions: [RelayLifecycleMachine.Action]
                switch result {
                case .mailroomClosed: actions = machine.mailroomClosed()
                case .shutdownRequested: actions = machine.shutdownRequested()
                case .forwardingEnded: actions = machine.forwardingEnded()
                case .publisherEnded: actions = machine.publisherEnded()
                case .opened(let opened):
                    store = opened
                    let readers = engine.readers(of: opened)
                    for reader in readers {
                        group.addTask {
                            let failure = Guarded<(any Error)?>(nil)
                            await reading.run {
                                do { try await reader() } catch { failure.withLock { $0 = error } }
                            }
                            return .readerEnded(failing: failure.withLock { $0 })
                        }
                    }
                    actions = machine.opened(readers: readers.count)
                case .openFailed(let error):
                    carrier.stopped(by: error)  // before any flush is told the relay stopped
                    actions = machine.openFailed(error)
                case .readerEnded(let error):
                    if let error { carrier.stopped(by: error) }
                    actions = machine.readerEnded(failing: error)
                }
                while !actions.isEmpty {
                    switch actions.removeFirst() {
                    case .startRunning:
                        guard let store else { continue }
                        group.addTask {
                            await publishing.run { await Self.publish(engine, on: store) }
                            return .publisherEnded
                        }
                    case .endPosts: postsContinuation.finish()
                    case .beginShutdown:
                        if carrier.gate.beginShutdown() { actions += machine.allForwarded() }
                    case .stopForwarding: forwarding.stop()
                    case .closeQueue: carrier.queue.close()
                    case .stopPublisher: publishing.stop()
                    case .stopReaders: reading.stop()
                    case .close:
                        if let store { await engine.close(store) }
                        actions += machine.closed()
                    case .finish:
                        group.cancelAll()  // the watchers
                        return machine.failure
                    }
                }
            }
            return machine.failure
        }
        if let failure { throw failure }
    }

    /// The publish loop on `store`, until the queue is closed and written out.
    private static func publish(_ engine: Engine, on store: Engine.Store) async {
        await engine.carrier.publish(
            policy: engine.failurePolicy,
            backoff: { await engine.backoff(attempt: $0) },
            prepare: { engine.prepare($0) },
            write: { try await engine.append($0, isRetry: $1, to: store) },
            failed: { await engine.appendFailed($0, on: store) }
        )
    }
}
