/// A value sender as ``ValueTable`` files it: its type and hash, enough to find its slot and
/// trivially copied, so a post computes it before taking a lock.
@usableFromInline
struct SenderDigest: Hashable {
    @usableFromInline let _type: ObjectIdentifier
    @usableFromInline let _hash: Int

    @inlinable
    init(_ sender: ValueSender) {
        self._type = sender._type
        self._hash = sender._hash
    }

    /// The digest of a sender whose type `H` is statically `Hashable` and is its dynamic type (not
    /// a class, an `Optional` or an existential): what ``init(_:)`` gives for its ``ValueSender``,
    /// with no dynamic cast and no existential.
    @inlinable
    init<H: Hashable>(value sender: H) {
        self._type = ObjectIdentifier(H.self)
        self._hash = sender.hashValue
    }

    @inlinable
    func hash(into hasher: inout Hasher) {
        hasher.combine(_rawHashValue(seed: 0))
    }

    /// The bucket hash, mixed from the sender's hash (already computed, by the sender's own
    /// `Hashable`, outside any lock), its type and the table's seed: a few multiplications in
    /// place of a `Hasher` under the table's lock on every post (the cost is in
    /// `Benchmarks/README.md`, "Lanes instead of one delivery lock").
    @inlinable
    func _rawHashValue(seed: Int) -> Int {
        let type = UInt64(truncatingIfNeeded: UInt(bitPattern: _type)) &* 0x9E37_79B9_7F4A_7C15
        return Address.mix(UInt64(truncatingIfNeeded: _hash) ^ type, seed: seed)
    }
}
