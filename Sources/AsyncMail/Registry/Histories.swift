import Synchronization

/// The histories of a mailroom's types, and its epoch (see ``History``).
@usableFromInline
final class Histories: Sendable {
    /// One bit per type that keeps history, at a place drawn from the type's identity: a post of a
    /// type whose bit is clear (every type, while none keeps history) checks this one atomic and
    /// nothing else, even beside types that do. Two types share a bit by chance in one of 64; a
    /// type whose bit a history-keeping one set only looks its history up and finds none. Bits are
    /// only set, since a type that keeps history keeps it until `close()`.
    @usableFromInline let _keeping = Atomic<UInt64>(0)
    /// The histories by type, found by a post with no lock (see ``TypeMap``); each stays, closed
    /// by `close()`, until the mailroom goes.
    @usableFromInline let _histories = TypeMap()
    /// Set by `close()`: from then on no history is found.
    @usableFromInline let _isClosed = Atomic<Bool>(false)
    /// The epoch: drawn once per mailroom, when it first keeps history (a mailroom that never does
    /// pays nothing for it), so that a position from another mailroom, or from this one before a
    /// restart, is recognised (two epochs collide by chance in one of 2^64). Also taken to make a
    /// history, so that two callers make one.
    private let epoch = Locked<UInt64?>(nil)

    init() {}

    /// Whether the type may keep history: when false, it does not.
    @inlinable func mayKeep<M: Mail>(_ type: M.Type) -> Bool {
        _keeping.load(ordering: .acquiring) & Self.bit(M.self) != 0
    }

    /// The type's bit: the top six bits of its metadata address times a Fibonacci multiplier (no
    /// hashing: a post pays a multiply and a shift).
    @inlinable static func bit(_ type: Any.Type) -> UInt64 {
        1 &<< ((UInt64(UInt(bitPattern: ObjectIdentifier(type))) &* 0x9E37_79B9_7F4A_7C15) &>> 58)
    }

    /// The type's history, if it keeps one.
    ///
    /// The one place a history's type is taken on trust: a history is only ever filed under the
    /// identity of its own mail type (see ``find(_:orMakeWith:maxAge:)``).
    @inlinable
    func history<M: Mail>(for type: M.Type) -> History<M>? {
        guard !_isClosed.load(ordering: .acquiring) else { return nil }
        return _histories.object(for: ObjectIdentifier(M.self), as: History<M>.self)
    }

    /// Makes the type keep history within these limits, or changes its limits.
    func keep<M: Mail>(_ type: M.Type, count: Int?, maxAge: Duration?) {
        let (history, existed) = find(M.self, orMakeWith: count, maxAge: maxAge)
        if existed { history.setLimits(count: count, maxAge: maxAge) }
    }

    /// The type's history, or a new one that keeps nothing: the positions of a type a relay
    /// routes, for a mailroom that keeps no history of it.
    func keepingNothingUnlessKept<M: Mail>(_ type: M.Type) -> History<M> {
        find(M.self, orMakeWith: 0, maxAge: nil).history
    }

    private func find<M: Mail>(
        _ type: M.Type,
        orMakeWith count: Int?,
        maxAge: Duration?
    ) -> (history: History<M>, existed: Bool) {
        epoch.withLock { epoch -> (History<M>, Bool) in
            if let history = _histories.object(for: ObjectIdentifier(M.self), as: History<M>.self) {
                return (history, true)
            }
            let drawn = epoch ?? UInt64.random(in: 1...UInt64.max)
            epoch = drawn
            let history = _histories.object(for: ObjectIdentifier(M.self), as: History<M>.self) {
                History<M>(epoch: drawn, count: count, maxAge: maxAge)
            }
            _keeping.bitwiseOr(Self.bit(M.self), ordering: .releasing)
            return (history, false)
        }
    }

    /// Closes every history: its subscriptions end, its mail is released.
    func close() {
        _isClosed.store(true, ordering: .releasing)
        for history in _histories.objects { (history as? any ClosableHistory)?.close() }
    }
}

/// A ``History`` of any type, for closing.
protocol ClosableHistory: Sendable {
    func close()
}

extension History: ClosableHistory {}
