import Synchronization

/// What may make an asynchronous post wait before it is made: a relay whose outbound queue is
/// full holds the post until there is room (see `Mailroom._admitPosts(through:)`).
///
/// While nothing is registered a post reads one word here. An admission never runs inside a
/// delivery: it runs before the post takes any lock, and the post itself runs inside it, on the
/// same task, so a relay's tap filter can tell the post it let through (a task-local value) from
/// one posted synchronously meanwhile.
@usableFromInline
final class PostAdmissions: Sendable {
    /// One admission: given the post's mail type and sender, it may wait, then runs the post
    /// (once) and returns its receipt.
    @usableFromInline
    typealias Admission =
        nonisolated(nonsending) @Sendable (
            _ type: ObjectIdentifier,
            _ sender: (any Sendable)?,
            _ post: nonisolated(nonsending) () async -> Receipt
        ) async -> Receipt

    private struct Registered {
        var admissions: [(key: Int, admission: Admission)] = []
        var nextKey = 0
    }

    /// Whether any admission is registered: the one word a post reads.
    @usableFromInline let _isActive = Atomic<Bool>(false)
    private let registered = Locked(Registered())

    @usableFromInline init() {}

    /// Whether a post must go through ``admit(_:_:_:)``.
    @inlinable var isActive: Bool {
        _isActive.load(ordering: .acquiring)
    }

    /// Registers an admission; returns the key that removes it.
    func add(_ admission: @escaping Admission) -> Int {
        registered.withLock { registered in
            defer { registered.nextKey += 1 }
            registered.admissions.append((registered.nextKey, admission))
            _isActive.store(true, ordering: .releasing)
            return registered.nextKey
        }
    }

    /// Removes the admission `key` names; a post already inside it finishes there.
    func remove(_ key: Int) {
        registered.withLock { registered in
            registered.admissions.removeAll { $0.key == key }
            _isActive.store(!registered.admissions.isEmpty, ordering: .releasing)
        }
    }

    /// Runs `post` inside every registered admission, the first registered outermost.
    @usableFromInline
    nonisolated(nonsending) func admit(
        _ type: ObjectIdentifier,
        _ sender: (any Sendable)?,
        _ post: () -> Receipt
    ) async -> Receipt {
        let admissions = registered.withLock { $0.admissions.map(\.admission) }
        return await Self.run(admissions[...], type, sender, post)
    }

    private nonisolated(nonsending) static func run(
        _ admissions: ArraySlice<Admission>,
        _ type: ObjectIdentifier,
        _ sender: (any Sendable)?,
        _ post: () -> Receipt
    ) async -> Receipt {
        guard let first = admissions.first else { return post() }
        return await first(type, sender) { await run(admissions.dropFirst(), type, sender, post) }
    }
}
