import Synchronization

/// Objects by type identity, read with no lock, written under one: what a post looks its type's
/// route table (or history, or metrics) up in, so that posts of different types, and of
/// different rooms of one type, share no lock and write no shared memory to find it.
///
/// Entries are only ever added, and each stays, with its object, until the map goes: a mailroom
/// has one entry per mail type it has seen, which a program bounds. That is what makes a read
/// safe with no lock and no reference counting: an object a reader finds cannot be freed under
/// it while the map lives (the reader holds the map). Slots are an open-addressing hash table of
/// atomic words, a key and the object's address; a writer stores the address before the key, with
/// release ordering, and a reader that loads the key with acquire ordering sees the address. When
/// the table is half full a writer copies it into one twice the size and publishes that; the old
/// table stays until the map goes, so a reader still probing it reads valid memory (the tables
/// kept add up to less than twice the newest).
///
/// Why `@unchecked Sendable` is safe: `current` is atomic; the slot words are atomics written only
/// under `writer`; everything else is under `writer`. `TypeMapTests` races readers against
/// writers, and CI runs it under ThreadSanitizer.
///
/// The products built on the core reach it as ``TypeIndex``.
@usableFromInline
package final class TypeMap: @unchecked Sendable {
    /// One table of slots: `capacity` pairs of words, a key (a type's identity; 0 for none) and
    /// the address of its object.
    @usableFromInline
    final class Slots {
        @usableFromInline let _mask: Int
        @usableFromInline let _words: UnsafeMutablePointer<Atomic<UInt>>

        init(capacity: Int) {
            _mask = capacity - 1
            _words = .allocate(capacity: 2 * capacity)
            for index in 0..<(2 * capacity) { (_words + index).initialize(to: Atomic(0)) }
        }

        deinit {
            _words.deinitialize(count: 2 * (_mask + 1))
            _words.deallocate()
        }

        /// Where `key`'s probe starts: a type's identity is an address, whose low bits are zero
        /// and whose high bits barely vary, so a Fibonacci multiply spreads it (one multiplication
        /// in place of a `Hasher`; its cost is in `Benchmarks/README.md`).
        @inlinable @inline(__always)
        static func bucket(_ key: UInt) -> Int {
            Int(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) &>> 32)
        }

        /// The address filed under `key`, if any.
        @inlinable @inline(__always)
        func find(_ key: UInt) -> UnsafeRawPointer? {
            var index = Self.bucket(key) & _mask
            while true {
                let found = _words[2 * index].load(ordering: .acquiring)
                if found == key { return UnsafeRawPointer(bitPattern: _words[2 * index + 1].load(ordering: .relaxed)) }
                if found == 0 { return nil }
                index = (index + 1) & _mask
            }
        }

        /// Files `object` under `key`, which is not filed yet; called holding the writer lock,
        /// with a free slot left.
        func insert(_ key: UInt, _ object: UnsafeRawPointer) {
            var index = Self.bucket(key) & _mask
            while _words[2 * index].load(ordering: .relaxed) != 0 { index = (index + 1) & _mask }
            _words[2 * index + 1].store(UInt(bitPattern: object), ordering: .relaxed)
            _words[2 * index].store(key, ordering: .releasing)
        }
    }

    /// What the writer keeps: every entry (the objects, strongly), and every table of slots made.
    struct Entries {
        var objects: [(key: ObjectIdentifier, object: any AnyObject & Sendable)] = []
        var tables: [Slots]
    }

    /// The newest table of slots, an unretained `Slots` that `entries` keeps.
    @usableFromInline let _current: Atomic<UnsafeRawPointer>
    private let writer: Locked<Entries>

    package init() {
        let slots = Slots(capacity: 16)
        _current = Atomic(UnsafeRawPointer(Unmanaged.passUnretained(slots).toOpaque()))
        writer = Locked(Entries(tables: [slots]))
    }

    /// Runs `body` with the object filed under `key`, unretained and unchecked: its type is the
    /// one every caller files under that key. The object is valid throughout `body`.
    ///
    /// `absent` is the result when nothing is filed under `key`. (`body` takes the object itself,
    /// not an optional: wrapping it in one made the compiler retain it, a write to the object that
    /// every post of a type would share.)
    @inlinable @inline(__always)
    package func withObject<Object: AnyObject & Sendable, Result>(
        for key: ObjectIdentifier,
        as type: Object.Type,
        absent: @autoclosure () -> Result,
        _ body: (Object) -> Result
    ) -> Result {
        let slots = Unmanaged<Slots>.fromOpaque(_current.load(ordering: .acquiring))
        let found = slots._withUnsafeGuaranteedRef { $0.find(UInt(bitPattern: key)) }
        guard let found else { return absent() }
        return Unmanaged<Object>.fromOpaque(found)._withUnsafeGuaranteedRef { body($0) }
    }

    /// The object filed under `key`, retained; nil if none.
    @inlinable
    package func object<Object: AnyObject & Sendable>(for key: ObjectIdentifier, as type: Object.Type) -> Object? {
        withObject(for: key, as: Object.self, absent: nil) { $0 }
    }

    /// The object filed under `key`, or `make()`'s, filed now; `make` runs holding the writer
    /// lock, so it must not run user code or take a lock that is taken before this one.
    @usableFromInline
    package func object<Object: AnyObject & Sendable>(
        for key: ObjectIdentifier,
        as type: Object.Type,
        orFile make: () -> Object
    ) -> Object {
        if let found = object(for: key, as: Object.self) { return found }
        return writer.withLock { entries in
            if let found = object(for: key, as: Object.self) { return found }
            let made = make()
            var slots = Unmanaged<Slots>.fromOpaque(_current.load(ordering: .relaxed)).takeUnretainedValue()
            if 2 * (entries.objects.count + 1) > slots._mask + 1 {
                slots = Slots(capacity: 2 * (slots._mask + 1))
                for (key, object) in entries.objects {
                    slots.insert(UInt(bitPattern: key), UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()))
                }
                entries.tables.append(slots)
                _current.store(UnsafeRawPointer(Unmanaged.passUnretained(slots).toOpaque()), ordering: .releasing)
            }
            slots.insert(UInt(bitPattern: key), UnsafeRawPointer(Unmanaged.passUnretained(made).toOpaque()))
            entries.objects.append((key, made))
            return made
        }
    }

    /// Every object filed, in the order they were filed.
    package var objects: [any AnyObject & Sendable] {
        writer.withLock { $0.objects.map(\.object) }
    }

    /// How many objects are filed.
    package var count: Int {
        writer.withLock { $0.objects.count }
    }
}
