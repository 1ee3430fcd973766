import Synchronization
import Testing

@testable import AsyncMail

/// An object to file, and a key of its own.
private final class Filed: Sendable {
    let number: Int
    init(_ number: Int) { self.number = number }
}

@Suite("TypeMap: read with no lock while another thread files")
struct TypeMapTests {
    @Test("an object filed is found by every later read, through every growth of the table")
    func filedIsFound() {
        let map = TypeMap()
        let keys = (0..<1_000).map { Filed($0) }
        for key in keys {
            #expect(map.object(for: ObjectIdentifier(key), as: Filed.self) == nil)
            _ = map.object(for: ObjectIdentifier(key), as: Filed.self) { Filed(key.number) }
        }
        for key in keys {
            #expect(map.object(for: ObjectIdentifier(key), as: Filed.self)?.number == key.number)
        }
        #expect(map.count == 1_000)
        withExtendedLifetime(keys) {}
    }

    @Test("the first object filed under a key wins, and a second filing returns it", .timeLimit(.minutes(1)))
    func firstWins() async {
        let map = TypeMap()
        let key = Filed(0)
        let numbers = await withTaskGroup(of: Int.self) { group in
            for thread in 0..<8 {
                group.addTask {
                    await onThread { map.object(for: ObjectIdentifier(key), as: Filed.self) { Filed(thread) }.number }
                }
            }
            return await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(numbers.count == 1, "every filer got the one object filed: \(numbers)")
        withExtendedLifetime(key) {}
    }

    // Its 5 threads spin through the table until the writer is done, which under ThreadSanitizer
    // took 7 to 33 s at the start of a run: they take turns with the other heavy tests and yield
    // the cores to the pool's threads (Tests/README.md, rule 7).
    @Test(
        "4 threads read while one files 2,000 keys: every key filed before a read began is found",
        .tags(.stress),
        .heavyTurns(limit: .seconds(120))
    )
    func readersRaceAWriter() async {
        let map = TypeMap()
        let keys = (0..<scaled(2_000)).map { Filed($0) }
        // How many keys the writer has filed; a reader looks up only those.
        let filed = Locked(0)
        let misses = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await onBackgroundThread {
                    for key in keys {
                        _ = map.object(for: ObjectIdentifier(key), as: Filed.self) { Filed(key.number) }
                        filed.withLock { $0 += 1 }
                    }
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    await onBackgroundThread {
                        var done = false
                        while !done {
                            let known = filed.withLock { $0 }
                            done = known == keys.count
                            for key in keys.prefix(known) {
                                let found = map.withObject(for: ObjectIdentifier(key), as: Filed.self, absent: nil) {
                                    $0.number
                                }
                                if found != key.number { misses.withLock { $0 += 1 } }
                            }
                        }
                    }
                }
            }
        }
        #expect(misses.withLock { $0 } == 0)
        withExtendedLifetime(keys) {}
    }
}
