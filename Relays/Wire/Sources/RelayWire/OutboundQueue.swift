@_spi(AsyncMailInternal) import AsyncMail

/// Posts waiting to be published, bounded; the publisher takes everything waiting at once, so
/// that posts that pile up while one transaction runs go out together in the next.
///
/// A post of the same type from the same sender as the one queued just before it joins that one
/// (up to ``coalescingLimit`` bytes of mail): the pair travels as one envelope and is delivered
/// as one batch, which keeps their order and lets nothing in between, for a fraction of the cost
/// of two envelopes. The limit still counts every post.
@_spi(AsyncMailRelay) public final class OutboundQueue: Sendable {
    @_spi(AsyncMailRelay) public enum Item: Sendable {
        case post(OutboundPost)
        /// Ephemeral mode: time to tell the fleet this origin's last number.
        case heartbeat
        /// A flush: resolved once everything queued before it is published.
        case flush(FlushTicket)
    }

    private struct State {
        var items: [Item] = []
        var posts = 0
        var isClosed = false
        var waiting: CheckedContinuation<Void, Never>?
    }

    /// The most mail bytes one coalesced post carries; a single larger post travels alone.
    @_spi(AsyncMailRelay) public static let coalescingLimit = 256 * 1024

    private let limit: Int
    private let state = Guarded(State())

    @_spi(AsyncMailRelay) public init(limit: Int) {
        self.limit = max(limit, 1)
    }

    /// Queues an item; false when a post finds the queue full, or anything finds it closed
    /// (a heartbeat or a flush always fits).
    @_spi(AsyncMailRelay) public func append(_ item: Item) -> Bool {
        let (accepted, waking): (Bool, CheckedContinuation<Void, Never>?) = state.withLock { state in
            guard !state.isClosed else { return (false, nil) }
            if case .post(let post) = item {
                guard state.posts < limit else { return (false, nil) }
                state.posts += 1
                if case .post(var previous) = state.items.last,
                    previous.canAbsorb(post, upTo: Self.coalescingLimit)
                {
                    state.items.removeLast()  // so that appending to `previous` does not copy
                    previous.append(post)
                    state.items.append(.post(previous))
                    return (true, nil)  // the publisher was woken for `previous` already
                }
            }
            state.items.append(item)
            defer { state.waiting = nil }
            return (true, state.waiting)
        }
        waking?.resume()
        return accepted
    }

    /// Once the publisher has stopped: takes what it left, and tells the flushes among it that
    /// the relay stopped.
    @_spi(AsyncMailRelay) public func abandon() {
        let left = state.withLock { state in
            defer { state.items = [] }
            return state.items
        }
        for case .flush(let ticket) in left { ticket.resolve(.notRunning) }
    }

    /// Stops accepting; what is queued is still handed out.
    @_spi(AsyncMailRelay) public func close() {
        let waking = state.withLock { state in
            state.isClosed = true
            defer { state.waiting = nil }
            return state.waiting
        }
        waking?.resume()
    }

    /// Everything queued, waiting for something if nothing is; nil once closed and empty.
    /// One consumer only.
    @_spi(AsyncMailRelay) public func takeAll() async -> [Item]? {
        while true {
            enum Outcome {
                case items([Item])
                case done, wait
            }
            let outcome: Outcome = state.withLock { state in
                if !state.items.isEmpty {
                    defer {
                        state.items = []
                        state.posts = 0
                    }
                    return .items(state.items)
                }
                return state.isClosed ? .done : .wait
            }
            switch outcome {
            case .items(let items): return items
            case .done: return nil
            case .wait:
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state in
                        guard state.items.isEmpty, !state.isClosed else { return true }
                        state.waiting = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }

    /// The posts among `items`, in order.
    @_spi(AsyncMailRelay) public static func posts(in items: [Item]) -> [OutboundPost] {
        items.compactMap { item in
            if case .post(let post) = item { post } else { nil }
        }
    }

    /// The mails of the posts among `items`.
    @_spi(AsyncMailRelay) public static func mailCount(of items: [Item]) -> Int {
        items.reduce(0) { count, item in
            if case .post(let post) = item { return count + post.mailCount }
            return count
        }
    }
}
