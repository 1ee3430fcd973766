/// A dictionary keyed by sender value, whose hash table holds only a small, trivially copyable
/// digest of each sender (its type and hash).
///
/// Keyed by ``ValueSender`` itself, a lookup copied and destroyed a 64-byte key holding an
/// existential and a closure at every probe. With 10,000 values the probe sequence of one key
/// could be long or short depending on the table's per-instance hash seed, so the same post beside
/// many other value senders cost more in one table than in the next. Digests are two words
/// compared in place; the full sender is compared once, on a digest match (figures in
/// `Benchmarks/README.md`).
@usableFromInline
struct ValueTable<Value> {
    /// What the hash table holds: enough to find a sender's slot, cheap to compare.
    @usableFromInline typealias Digest = SenderDigest

    /// One sender and its value. A class, so that reading a slot out of the hash table is one
    /// retain rather than a copy of the sender's existential, its closure and the value.
    @usableFromInline
    final class Entry {
        @usableFromInline let _sender: ValueSender
        /// Only touched under the lock of the table that holds this (see ``RouteTable`` on
        /// unchecked exclusivity).
        @usableFromInline @exclusivity(unchecked) var _value: Value

        @inlinable
        init(sender: ValueSender, value: Value) {
            self._sender = sender
            self._value = value
        }
    }

    /// What ``candidate(for:sender:)`` found.
    @usableFromInline
    enum Candidate {
        /// No entry has the sender's digest.
        case none
        /// One entry has it: it is the sender's exactly when its `_sender == sender`, which the
        /// caller checks (outside any lock: both are immutable).
        case unverified(Entry)
        /// Several entries share the digest; this is the sender's value, compared here, or nil.
        case verified(Value?)
    }

    /// The entries of one digest: nearly always one; several only when unequal values of one
    /// type share a hash.
    @usableFromInline
    enum Slot {
        case one(Entry)
        case several([Entry])

        @inlinable
        var entries: [Entry] {
            switch self {
            case .one(let entry): [entry]
            case .several(let entries): entries
            }
        }
    }

    @usableFromInline var _slots: [Digest: Slot] = [:]

    @inlinable init() {}

    @inlinable var isEmpty: Bool { _slots.isEmpty }

    /// Every value, in no particular order.
    @inlinable var values: [Value] { entries.map(\._value) }

    /// Every sender with its value, in no particular order.
    @inlinable var entries: [Entry] { _slots.values.flatMap(\.entries) }

    /// The entry that may be `sender`'s, without the equality check in the common case: a
    /// sender's `==` is a dynamic cast or two, which a post makes after releasing the lock that
    /// guards this table.
    ///
    /// `digest` is `sender`'s, worked out before the lock; the sender itself is compared only
    /// when several senders share the digest.
    @inlinable
    func candidate<S: Sendable>(for digest: Digest, sender: S?) -> Candidate {
        switch _slots[digest] {
        case nil: return .none
        case .one(let entry): return .unverified(entry)
        case .several(let entries):
            guard let sender else { return .verified(nil) }
            return .verified(entries.first { $0._sender.matches(sender, digest: digest) }?._value)
        }
    }

    @inlinable
    subscript(sender: ValueSender) -> Value? {
        get {
            switch _slots[Digest(sender)] {
            case nil:
                return nil
            case .one(let entry):
                return entry._sender == sender ? entry._value : nil
            case .several(let entries):
                return entries.first { $0._sender == sender }?._value
            }
        }
        set {
            let digest = Digest(sender)
            let slot = _slots[digest]
            // The common cases, one sender per digest, without building an array: a retained
            // type's `KeptMail` finds its sender's room on every post.
            switch slot {
            case nil:
                if let newValue { _slots[digest] = .one(Entry(sender: sender, value: newValue)) }
                return
            case .one(let entry) where entry._sender == sender:
                _slots[digest] = newValue.map { .one(Entry(sender: entry._sender, value: $0)) }
                return
            default:
                break
            }
            var entries = slot?.entries ?? []
            let index = entries.firstIndex { $0._sender == sender }
            switch (index, newValue) {
            case (let index?, let value?): entries[index]._value = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append(Entry(sender: sender, value: value))
            case (nil, nil): return
            }
            switch entries.count {
            case 0: _slots[digest] = nil
            case 1: _slots[digest] = .one(entries[0])
            default: _slots[digest] = .several(entries)
            }
        }
    }
}
