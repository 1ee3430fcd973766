/// An object's identity as a dictionary key, hashed with a few multiplications instead of a
/// `Hasher`, under a shard's lock, which a post holds to find its room (the cost is in
/// `Benchmarks/README.md`, "Lanes instead of one delivery lock").
@usableFromInline
struct Address: Hashable {
    @usableFromInline let _id: ObjectIdentifier

    @inlinable
    init(_ id: ObjectIdentifier) {
        self._id = id
    }

    @inlinable
    func hash(into hasher: inout Hasher) {
        hasher.combine(_id)
    }

    @inlinable
    func _rawHashValue(seed: Int) -> Int {
        Self.mix(UInt64(truncatingIfNeeded: UInt(bitPattern: _id)), seed: seed)
    }

    /// A bucket hash from `bits`, already spread (an address, or a hash a sender computed), and a
    /// table's seed: MurmurHash3's 64-bit finaliser, a few multiplications in place of a `Hasher`.
    /// Shared by the look-ups that run under a shard's lock.
    @inlinable
    static func mix(_ bits: UInt64, seed: Int) -> Int {
        var mixed = bits ^ UInt64(truncatingIfNeeded: seed)
        mixed = (mixed ^ (mixed >> 33)) &* 0xFF51_AFD7_ED55_8CCD
        mixed = (mixed ^ (mixed >> 33)) &* 0xC4CE_B9FE_1A85_EC53
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 33))
    }
}
