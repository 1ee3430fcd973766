import Synchronization

/// The watchers of subscriber counts (`Mailroom.subscriberCounts`): each gets the count it
/// watches at once, then again whenever a subscription of its type comes or goes and the count
/// it reads differs from the last it was given.
///
/// A count is read with no lock of this type held, since reading it can end subscriptions whose
/// pinned object has gone, and release their kept mail (user deinits). Reads of one watcher never
/// overlap: a change during a read marks the watcher, and the reader reads again, so the last
/// value a watcher is given was read after the last change. Its stream keeps only the newest
/// value, so churn that nobody reads costs one slot.
@usableFromInline
final class Demand: Sendable {
    private struct Watcher {
        let type: ObjectIdentifier
        let read: @Sendable () -> Int
        let continuation: AsyncStream<Int>.Continuation
        /// The count last yielded.
        var given: Int?
        /// A change came since the current read began: read again.
        var isStale = false
        /// A caller is reading for it; others only mark it stale.
        var isReading = false
    }

    /// What a `whileSubscribed` work is keyed by: what its count counts, with no sender held (an
    /// object is named by its address, which the caller's `Senders` keeps alive meanwhile).
    enum WorkKey: Sendable, Equatable {
        case all
        case object(ObjectIdentifier)
        case value(ValueSender)
        case senderType(ObjectIdentifier)
    }

    /// Where a `whileSubscribed` work stands.
    enum WorkPhase: Sendable, Equatable {
        /// Not started, or stopped: nobody subscribed.
        case idle
        /// Started, and subscribers remain.
        case running
        /// Started, and the last subscriber left: it stops when its grace (`stopAfter:`) ends.
        case lingering
    }

    private struct Work {
        let type: ObjectIdentifier
        let key: WorkKey
        var phase = WorkPhase.idle
    }

    private struct State {
        var watchers: [Int: Watcher] = [:]
        var works: [Int: Work] = [:]
        var nextID = 0
        var isClosed = false
    }

    private let state = Locked(State())  // annotated for ThreadSanitizer, which cannot see a bare Mutex
    /// How many watchers there are: the one load a subscription's change pays while nobody watches.
    @usableFromInline let _watchers = Atomic<Int>(0)

    @usableFromInline init() {}

    /// A subscription of `type` came or went.
    @inlinable
    func changed(_ type: ObjectIdentifier) {
        guard _watchers.load(ordering: .acquiring) > 0 else { return }
        refresh(watchersOf: type)
    }

    /// Watches the count `read` reads for `type`: the current count at once, then every change.
    func watch(_ type: ObjectIdentifier, reading read: @escaping @Sendable () -> Int) -> AsyncStream<Int> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> Int? in
            guard !state.isClosed else { return nil }
            state.nextID += 1
            state.watchers[state.nextID] = Watcher(type: type, read: read, continuation: continuation)
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        _watchers.add(1, ordering: .releasing)
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        refresh(id)
        return stream
    }

    // MARK: The works of `whileSubscribed`

    /// Registers a `whileSubscribed` work, idle; its watchers are told of every change of phase.
    func addWork(_ type: ObjectIdentifier, _ key: WorkKey) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.works[state.nextID] = Work(type: type, key: key)
            return state.nextID
        }
    }

    /// Moves a work to `phase`; its type's watchers read again only when the phase changed (a
    /// read recounts the type's subscriptions too, for every count watcher of it).
    func setWork(_ id: Int, _ phase: WorkPhase) {
        let changed = state.withLock { state -> ObjectIdentifier? in
            guard let work = state.works[id], work.phase != phase else { return nil }
            state.works[id]?.phase = phase
            return work.type
        }
        if let changed { refresh(watchersOf: changed) }
    }

    /// Forgets a work that returned.
    func removeWork(_ id: Int) {
        // An idle work counted nowhere: its going changes no count.
        guard let removed = state.withLock({ $0.works.removeValue(forKey: id) }), removed.phase != .idle else { return }
        refresh(watchersOf: removed.type)
    }

    /// How many works of `type` and `key` are in each phase but idle.
    func works(_ type: ObjectIdentifier, _ key: WorkKey) -> (running: Int, lingering: Int) {
        state.withLock { state in
            state.works.values.reduce(into: (running: 0, lingering: 0)) { counts, work in
                guard work.type == type, work.key == key else { return }
                switch work.phase {
                case .idle: break
                case .running: counts.running += 1
                case .lingering: counts.lingering += 1
                }
            }
        }
    }

    /// Ends every watcher's stream: the mailroom closed.
    func close() {
        let ended = state.withLock { state -> [AsyncStream<Int>.Continuation] in
            state.isClosed = true
            defer { state.watchers = [:] }
            return state.watchers.values.map(\.continuation)
        }
        for continuation in ended { continuation.finish() }
    }

    private func remove(_ id: Int) {
        let removed = state.withLock { $0.watchers.removeValue(forKey: id) }
        if removed != nil { _watchers.subtract(1, ordering: .releasing) }
    }

    @usableFromInline
    func refresh(watchersOf type: ObjectIdentifier) {
        let ids = state.withLock { state in state.watchers.filter { $0.value.type == type }.map(\.key) }
        for id in ids { refresh(id) }
    }

    /// Reads the watcher's count until no change came during the read, yielding each that differs
    /// from the last given; or, while another caller reads for it, marks it stale for that one.
    private func refresh(_ id: Int) {
        let read = state.withLock { state -> (@Sendable () -> Int)? in
            guard var watcher = state.watchers[id] else { return nil }
            watcher.isStale = true
            defer { state.watchers[id] = watcher }
            guard !watcher.isReading else { return nil }
            watcher.isReading = true
            return watcher.read
        }
        guard let read else { return }
        while true {
            state.withLock { $0.watchers[id]?.isStale = false }
            let count = read()
            let again = state.withLock { state -> Bool in
                guard var watcher = state.watchers[id] else { return false }
                defer { state.watchers[id] = watcher }
                if watcher.given != count {
                    watcher.given = count
                    watcher.continuation.yield(count)  // resumes its consumer's task at most: no user code
                }
                if watcher.isStale { return true }
                watcher.isReading = false
                return false
            }
            if !again { return }
        }
    }
}
