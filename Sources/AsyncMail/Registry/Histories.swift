import Synchronization

/// Which of a mailroom's types keep history, and its epoch. The histories themselves live in
/// each type's ``RouteTable``, room by room (see `RouteTable+History.swift`).
@usableFromInline
final class Histories: Sendable {
    /// One bit per type that keeps history, at a place drawn from the type's identity: a post of a
    /// type whose bit is clear (every type, while none keeps history) checks this one atomic and
    /// nothing else, even beside types that do. Two types share a bit by chance in one of 64; a
    /// type whose bit a history-keeping one set finds its table keeps none, and posts as any type.
    /// Bits are only set, since a type that keeps history keeps it until `close()`.
    @usableFromInline let _keeping = Atomic<UInt64>(0)
    /// The epoch: drawn once per mailroom, when it first keeps history (a mailroom that never does
    /// pays nothing for it), so that a position from another mailroom, or from this one before a
    /// restart, is recognised (two epochs collide by chance in one of 2^64).
    private let drawn = Locked<UInt64?>(nil)

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

    /// The mailroom's epoch, drawn now if this is the first time.
    var epoch: UInt64 {
        drawn.withLock { drawn in
            if let drawn { return drawn }
            let epoch = UInt64.random(in: 1...UInt64.max)
            drawn = epoch
            return epoch
        }
    }

    /// Marks the type as keeping history, so that its posts go the history way.
    func keep<M: Mail>(_ type: M.Type) {
        _keeping.bitwiseOr(Self.bit(M.self), ordering: .releasing)
    }
}
