/// An object's identity as a dictionary key, hashed with a few multiplications: a `Hasher` took
/// about 150 instructions under the table's index lock, which posts to every room take.
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
        var mixed = UInt64(truncatingIfNeeded: UInt(bitPattern: _id)) ^ UInt64(truncatingIfNeeded: seed)
        mixed = (mixed ^ (mixed >> 33)) &* 0xFF51_AFD7_ED55_8CCD
        mixed = (mixed ^ (mixed >> 33)) &* 0xC4CE_B9FE_1A85_EC53
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 33))
    }
}
