/// A relay's run, as a value: every engine's `run()` is this machine and the effects it names,
/// so the order in which a relay starts, drains and stops is decided once.
///
/// The runner (`MailCarrier.run(_:)`) keeps one task group. It tells the machine what each child
/// ended with, and does the actions returned, in order, holding no lock:
///
/// - `opening`: forwarding runs from the first post, so the outbound bound holds while the store
///   opens. Opened: ``Action/startRunning`` (the publisher, the readers and the chores).
/// - `running` until a graceful shutdown or cancellation (``shutdownRequested()``):
///   ``Action/beginShutdown`` stops admitting posts; once everything admitted before it is
///   forwarded, ``Action/closeQueue``; once the publisher has written the queue out,
///   ``Action/stopReaders``; once they have stopped, ``Action/close``; then ``Action/finish``.
/// - A failure (the store cannot be opened, or a reader gives up for good): the same steps, but
///   forwarding and the publisher are stopped at once (``Action/stopForwarding``,
///   ``Action/stopPublisher``), and ``failure`` is what `run()` throws.
///
/// A shutdown asked for while the store opens waits for the open's outcome: what was posted
/// before it is still published. No threads, no I/O: its transitions are tested as values.
@_spi(AsyncMailRelay) public struct RelayLifecycleMachine: Sendable {
    /// Where the run is.
    @_spi(AsyncMailRelay) public enum State: Sendable, Equatable {
        /// Forwarding; the store is opening.
        case opening
        /// Forwarding, publishing, reading.
        case running
        /// Stopping: forwarding and publishing what was admitted before the stop.
        case draining
        /// Published: the readers and chores are stopping.
        case stoppingReaders
        /// The store is closing.
        case closing
        /// Done: `run()` returns, or throws ``failure``.
        case finished
    }

    /// What the runner does next.
    @_spi(AsyncMailRelay) public enum Action: Sendable, Equatable {
        /// Start the publisher, the readers and the chores on the open store.
        case startRunning
        /// The mailroom closed: end the stream of posts, so forwarding ends once it is read.
        case endPosts
        /// Stop admitting posts (the gate); tell ``allForwarded()`` if everything is forwarded.
        case beginShutdown
        /// Stop the forwarding loop now.
        case stopForwarding
        /// Close the outbound queue: the publisher writes what it holds, then ends.
        case closeQueue
        /// Stop the publisher now; what it still held is reported as a failed publish.
        case stopPublisher
        /// Stop the readers and the chores.
        case stopReaders
        /// Close the store (leaving presence first); tell ``closed()`` when done.
        case close
        /// Cancel what still waits (the shutdown and mailroom watchers) and return.
        case finish
    }

    private enum Child: Equatable {
        case notStarted, running, stopping, ended
        var isLive: Bool { self == .running || self == .stopping }
    }

    private enum Store: Equatable {
        case opening, open, closing, closed
        /// The open failed: there is nothing to close.
        case failed
    }

    private enum Shutdown: Equatable {
        case none, requested, begun
    }

    private var store = Store.opening
    private var forwarding = Child.running
    private var publisher = Child.notStarted
    /// Readers and chores still running.
    private var readers = 0
    private var readersStopped = false
    private var shutdown = Shutdown.none
    private var queueClosed = false
    private var postsEnded = false
    private var isFinished = false

    /// What stopped the run; `run()` throws it. The first failure wins.
    @_spi(AsyncMailRelay) public private(set) var failure: (any Error)?

    @_spi(AsyncMailRelay) public init() {}

    @_spi(AsyncMailRelay) public var state: State {
        if isFinished { return .finished }
        switch store {
        case .opening: return shutdown == .none && failure == nil ? .opening : .draining
        case .closing, .closed, .failed: return .closing
        case .open:
            if readersStopped { return .stoppingReaders }
            return shutdown == .none && failure == nil ? .running : .draining
        }
    }

    /// The store is open, and `readers` readers and chores will run on it.
    @_spi(AsyncMailRelay) public mutating func opened(readers: Int) -> [Action] {
        guard store == .opening else { return [] }
        store = .open
        publisher = .running
        self.readers = readers
        return [.startRunning] + next()
    }

    /// The store could not be opened: the run stops, throwing `error`.
    @_spi(AsyncMailRelay) public mutating func openFailed(_ error: any Error) -> [Action] {
        guard store == .opening else { return [] }
        store = .failed
        failure = failure ?? error
        return next()
    }

    /// A graceful shutdown began, or the run was cancelled.
    @_spi(AsyncMailRelay) public mutating func shutdownRequested() -> [Action] {
        guard shutdown == .none else { return [] }
        shutdown = .requested
        return next()
    }

    /// ``Action/beginShutdown`` found everything admitted already forwarded: the forwarding loop
    /// waits for no more mail.
    @_spi(AsyncMailRelay) public mutating func allForwarded() -> [Action] {
        guard forwarding == .running else { return [] }
        forwarding = .stopping
        return [.stopForwarding] + next()
    }

    /// The mailroom closed: nothing more will be posted.
    @_spi(AsyncMailRelay) public mutating func mailroomClosed() -> [Action] {
        guard !postsEnded else { return [] }
        postsEnded = true
        return [.endPosts]
    }

    /// The forwarding loop ended.
    @_spi(AsyncMailRelay) public mutating func forwardingEnded() -> [Action] {
        forwarding = .ended
        return next()
    }

    /// The publisher ended: the queue is closed and written out, or it was stopped.
    @_spi(AsyncMailRelay) public mutating func publisherEnded() -> [Action] {
        publisher = .ended
        return next()
    }

    /// A reader or chore ended; with `error`, it gave up for good and the run stops.
    @_spi(AsyncMailRelay) public mutating func readerEnded(failing error: (any Error)? = nil) -> [Action] {
        readers = max(readers - 1, 0)
        if let error, failure == nil, !isFinished { failure = error }
        return next()
    }

    /// ``Action/close`` is done.
    @_spi(AsyncMailRelay) public mutating func closed() -> [Action] {
        guard store == .closing else { return [] }
        store = .closed
        return next()
    }

    /// The actions the state now calls for, each once.
    private mutating func next() -> [Action] {
        guard !isFinished, shutdown != .none || failure != nil else { return [] }
        guard store != .opening else { return [] }  // what was posted still goes out once it opens
        var actions: [Action] = []
        if failure != nil {
            if forwarding == .running {
                forwarding = .stopping
                actions.append(.stopForwarding)
            }
            if publisher == .running {
                publisher = .stopping
                actions.append(.stopPublisher)
            }
        } else if shutdown == .requested {
            shutdown = .begun
            actions.append(.beginShutdown)
        }
        if forwarding == .ended, !queueClosed {
            queueClosed = true
            actions.append(.closeQueue)
        }
        guard !publisher.isLive else { return actions }
        if readers > 0, !readersStopped {
            readersStopped = true
            actions.append(.stopReaders)
        }
        if readers == 0, store == .open {
            store = .closing
            actions.append(.close)
        }
        if readers == 0, store == .closed || store == .failed, forwarding == .ended {
            isFinished = true
            actions.append(.finish)
        }
        return actions
    }
}
