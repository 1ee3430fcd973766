/// Elements oldest first, appended at the back and taken from the front in O(1), with no
/// allocation per element and no `Optional` slot: the history a room keeps (see `KeptRoom`).
///
/// What it gives up, it moves out to its caller, never destroys: a room trims its history holding
/// its shard's lock, and a mail's deinit is user code, so the caller releases what it was handed
/// once no lock is held. Only its deinit destroys elements.
///
/// Not thread-safe: its owner guards it (a `KeptRoom`, under its shard's lock). Its properties
/// skip dynamic exclusivity checks for the reason `RouteTable` gives: the owner's lock orders
/// every access across threads, and no code but this type's runs during one.
@usableFromInline
final class Ring<Element> {
    /// `_capacity` slots; the `_count` live ones start at `_head` and wrap.
    @usableFromInline @exclusivity(unchecked) var _slots: UnsafeMutablePointer<Element>
    @usableFromInline @exclusivity(unchecked) var _capacity = 0
    @usableFromInline @exclusivity(unchecked) var _head = 0
    @usableFromInline @exclusivity(unchecked) var _count = 0

    @inlinable init() {
        _slots = .allocate(capacity: 0)
    }

    deinit {
        for offset in 0..<_count { slot(offset).deinitialize(count: 1) }
        _slots.deallocate()
    }

    /// How many elements it holds.
    @inlinable var count: Int { _count }

    /// The slot of the element `offset` places after the oldest.
    @inlinable @inline(__always)
    func slot(_ offset: Int) -> UnsafeMutablePointer<Element> {
        let index = _head &+ offset
        return _slots + (index < _capacity ? index : index &- _capacity)
    }

    /// The element `offset` places after the oldest; `offset` must be below ``count``.
    @inlinable
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < _count, "Ring index out of range")
        return slot(offset).pointee
    }

    /// Appends `element` after the newest, growing the storage if it is full.
    @inlinable
    func append(_ element: Element) {
        if _count == _capacity { grow() }
        slot(_count).initialize(to: element)
        _count &+= 1
    }

    /// Takes the oldest element out; the ring must not be empty.
    @inlinable
    func removeFirst() -> Element {
        precondition(_count > 0, "removeFirst() on an empty Ring")
        let element = (_slots + _head).move()
        _head = _head &+ 1 == _capacity ? 0 : _head &+ 1
        _count &-= 1
        return element
    }

    /// Takes every element out, oldest first.
    @inlinable
    func removeAll() -> [Element] {
        var taken: [Element] = []
        taken.reserveCapacity(_count)
        while _count > 0 { taken.append(removeFirst()) }
        _head = 0
        return taken
    }

    /// Copies of the elements from `offset` places after the oldest to the newest.
    @inlinable
    func elements(from offset: Int) -> [Element] {
        guard offset < _count else { return [] }
        return (Swift.max(0, offset)..<_count).map { slot($0).pointee }
    }

    /// Doubles the storage (from 4), moving the elements to its front, oldest first.
    @usableFromInline
    func grow() {
        let capacity = Swift.max(4, _capacity * 2)
        let slots = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        let first = Swift.min(_count, _capacity - _head)  // up to the end of the old storage
        slots.moveInitialize(from: _slots + _head, count: first)
        (slots + first).moveInitialize(from: _slots, count: _count - first)
        _slots.deallocate()
        (_slots, _capacity, _head) = (slots, capacity, 0)
    }
}
