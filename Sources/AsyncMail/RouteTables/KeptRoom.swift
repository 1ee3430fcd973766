/// The mail a type keeps for one room (one sender value or object, or mail posted with no
/// sender): its latest mail, once ``Mailroom/retainLatest(_:)`` opted the type in, and its
/// history, with the room's own sequence numbers and limits, once `Mailroom.retainHistory` did.
///
/// Lives in the ``RouteShard`` the room falls in (see ``KeptMail``) and, like everything there, is
/// only read or written holding that shard's lock; a post records to it holding its lanes too, so
/// a room's sequence numbers, and its latest mail, follow the order its subscribers hear its mail
/// in (see ``Switchboard/postKeepingHistory(_:from:key:)``). That is why its mutable properties
/// skip dynamic exclusivity checks (see ``RouteTable``), and why `@unchecked Sendable` is safe,
/// as for ``RouteShard``: what crosses threads outside that lock is a room taken out of its
/// shard to be released, which nothing reads again, or a post's reference to the room it found,
/// which it reads again only holding the lock. The model and stress tests, run under
/// ThreadSanitizer in CI, keep and read mail from many threads at once.
@usableFromInline
final class KeptRoom<M: Mail>: @unchecked Sendable {
    /// A kept mail, its number in the room and in the type (its stamp: see
    /// ``RouteTable/_stamps``), and when it was posted (for `maxAge`).
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let _mail: M
        @usableFromInline let _sequence: UInt64
        @usableFromInline let _stamp: UInt64
        @usableFromInline let _postedAt: ContinuousClock.Instant

        @inlinable
        init(mail: M, sequence: UInt64, stamp: UInt64, postedAt: ContinuousClock.Instant) {
            self._mail = mail
            self._sequence = sequence
            self._stamp = stamp
            self._postedAt = postedAt
        }
    }

    /// The kept entries, oldest first. A dropped entry is moved out and handed to the caller, so
    /// that its mail is released once no lock is held.
    @usableFromInline let _entries = Ring<Entry>()
    /// The number the next mail gets; the ones below it were posted.
    @usableFromInline @exclusivity(unchecked) var _nextSequence: UInt64 = 1
    /// Whose positions the room's mail has: the mailroom's epoch, or the one a relay's table gave
    /// the room (see ``prepare(epoch:first:count:)``).
    @usableFromInline @exclusivity(unchecked) var _epoch: UInt64
    /// The room's digest in positions (see ``RoomDigest``); nil in a room made to keep only its
    /// latest mail, until its first history post works it out (it runs the sender's `description`,
    /// so never under a lock).
    @usableFromInline @exclusivity(unchecked) var _room: UInt32?
    /// The room's object, for an object room: its history goes with it (nobody can name it).
    @usableFromInline weak let _object: AnyObject?
    @usableFromInline let _isObjectRoom: Bool
    /// The room's latest mail and its stamp (see ``RouteTable/_stamps``), while the type keeps its
    /// latest: kept apart from the entries, which the history's limits drop.
    @usableFromInline @exclusivity(unchecked) var _latest: M?
    @usableFromInline @exclusivity(unchecked) var _latestStamp: UInt64 = 0

    @usableFromInline
    init(epoch: UInt64, room: UInt32?, object: AnyObject?) {
        self._epoch = epoch
        self._room = room
        self._object = object
        self._isObjectRoom = object != nil
    }

    /// Whether this is the history of an object room whose object has gone.
    @inlinable var hasDeparted: Bool { _isObjectRoom && _object == nil }

    @inlinable var keptCount: Int { _entries.count }

    /// The number of the oldest kept mail, or the next number when none is kept.
    @inlinable var firstKept: UInt64 { _entries.count > 0 ? _entries[0]._sequence : _nextSequence }

    /// The room's newest number: 0 before its first mail.
    @inlinable var newest: UInt64 { _nextSequence - 1 }

    /// The kept entries after `sequence`, oldest first. Kept numbers run without a hole from
    /// ``firstKept``, so the first of them is found by subtraction.
    @usableFromInline
    func kept(after sequence: UInt64) -> [Entry] {
        let skip = sequence < firstKept ? 0 : Int(clamping: sequence - firstKept + 1)
        return _entries.elements(from: skip)
    }

    /// Appends posted mail, numbered on from the room's next number and stamped from
    /// `firstStamp`; adds what the limits dropped to `dropped`, to release once no lock is held,
    /// and returns the first number.
    @inlinable
    func append(
        _ mails: [M],
        firstStamp: UInt64,
        limits: HistoryLimits,
        now: ContinuousClock.Instant,
        into dropped: inout DroppedEntries<M>
    ) -> UInt64 {
        let first = _nextSequence
        var stamp = firstStamp
        for mail in mails {
            _entries.append(Entry(mail: mail, sequence: _nextSequence, stamp: stamp, postedAt: now))
            _nextSequence &+= 1
            stamp &+= 1
        }
        trim(to: limits, now: now, into: &dropped)
        return first
    }

    /// Drops what `limits` exclude (the oldest past the count, and those older than the age),
    /// into `dropped`.
    @inlinable
    func trim(to limits: HistoryLimits, now: ContinuousClock.Instant, into dropped: inout DroppedEntries<M>) {
        var drop = 0
        if let count = limits.count, keptCount > count { drop = keptCount - count }
        if let maxAge = limits.maxAge {
            while drop < _entries.count, now - _entries[drop]._postedAt > maxAge { drop += 1 }
        }
        if drop > 0 { dropOldest(drop, into: &dropped) }
    }

    /// Drops what `limits` exclude, and returns it.
    @usableFromInline
    func trim(to limits: HistoryLimits, now: ContinuousClock.Instant) -> [Entry] {
        var dropped = DroppedEntries<M>()
        trim(to: limits, now: now, into: &dropped)
        return dropped.all
    }

    /// Moves the `count` oldest entries into `dropped`.
    @inlinable
    func dropOldest(_ count: Int, into dropped: inout DroppedEntries<M>) {
        for _ in 0..<count { dropped.add(_entries.removeFirst()) }
    }

    /// Readies the room for `count` mails whose numbers a relay's table gave, starting at `first`
    /// in `epoch`, and returns how many of them, from the front, it already has (a row read
    /// twice), the hole before them (mails numbered that never came: rows deleted or rejected
    /// before this mailroom read them), and what it dropped. Another epoch (the table was made
    /// anew) or a hole drops what is kept, so the kept numbers stay without a hole and a resume
    /// from before the hole is told exactly how many it missed.
    ///
    /// A room that never had a number here takes the table's epoch and numbers: with mail, its
    /// hole is every number before `first`; without (a relay moving the room on as it starts, to
    /// numbers from before it ran), it has none. A room that had numbers of another epoch has no
    /// known hole: how much was missed is unknown, and told as a gap on resume.
    @usableFromInline
    func prepare(epoch: UInt64, first: UInt64, count: Int) -> (skip: Int, hole: UInt64, dropped: [Entry]) {
        let isFresh = _nextSequence == 1
        if epoch != _epoch {
            _epoch = epoch
            _nextSequence = first
            return (0, isFresh && count > 0 ? first - 1 : 0, takeAll())
        }
        if first < _nextSequence { return (Int(clamping: min(_nextSequence - first, UInt64(count))), 0, []) }
        guard first > _nextSequence else { return (0, 0, []) }
        defer { _nextSequence = first }
        return (0, isFresh && count == 0 ? 0 : first - _nextSequence, takeAll())
    }

    /// Keeps `mail`, stamped `stamp`, as the room's latest; returns the one it replaced.
    @inlinable
    func recordLatest(_ mail: M, stamp: UInt64) -> M? {
        defer { (_latest, _latestStamp) = (mail, stamp) }
        return _latest
    }

    /// Takes the history's entries out, for a new epoch; the latest mail stays.
    @usableFromInline
    func takeAll() -> [Entry] {
        _entries.removeAll()
    }
}

/// Kept mail that one change dropped, handed out of the lock so that it is released with none
/// held (a mail's deinit is user code). The first in place: a post past its room's count limit
/// drops one mail, and an array would cost an allocation per post.
@usableFromInline
struct DroppedEntries<M: Mail>: Sendable {
    @usableFromInline var _one: KeptRoom<M>.Entry?
    @usableFromInline var _more: [KeptRoom<M>.Entry] = []

    @inlinable init() {}

    @inlinable
    mutating func add(_ entry: KeptRoom<M>.Entry) {
        if _one == nil { _one = entry } else { _more.append(entry) }
    }

    @inlinable
    mutating func add(contentsOf entries: [KeptRoom<M>.Entry]) {
        for entry in entries { add(entry) }
    }

    /// Every entry dropped.
    @usableFromInline var all: [KeptRoom<M>.Entry] { (_one.map { [$0] } ?? []) + _more }
}

/// The limits a type's history keeps each room's mail within (see `Mailroom.retainHistory`).
@usableFromInline
struct HistoryLimits: Sendable, Equatable {
    @usableFromInline let count: Int?
    @usableFromInline let maxAge: Duration?

    @inlinable
    init(count: Int?, maxAge: Duration?) {
        self.count = count
        self.maxAge = maxAge
    }
}
