// `Probe threads`: what many OS threads posting at once cost one mailroom. Each thread calls
// `postSynchronously` in a loop, as an event loop or a thread pool does; the cooperative pool
// has as many threads as cores, so async tasks hide a lock convoy that threads show. Shapes:
// distinct rooms of one type, distinct types, distinct rooms of a history-keeping type, and one
// room shared by every thread; each of the first three beside the same posts into separate
// mailrooms, one per thread (the ceiling: nothing shared). Every figure is a ratio within one
// run: print the core count beside it.
import AsyncMail
import Foundation
import Synchronization

/// What the posting threads are given.
enum ThreadShape: String, CaseIterable {
    case distinctRooms = "distinct rooms, one mailroom"
    case distinctTypes = "distinct types, one mailroom"
    case historyRooms = "distinct rooms of a history type"
    case sharedRoom = "one room shared by all threads"
    case churning = "distinct rooms while subscriptions to 64 other rooms churn"
}

/// A synchronous post to one place, with what it needs kept alive.
struct ThreadPoster: Sendable {
    let post: @Sendable () -> Void
}

/// Subscribes once (newest mail only, never read: the figure is the posting side's) and returns
/// a synchronous post to that place: room `room` of `M`, or every sender of `M` when nil.
func syncPoster<M: Blank>(
    _ type: M.Type,
    room: Int?,
    on mailroom: Mailroom,
    subscribe: Bool = true
) async
    -> ThreadPoster
{
    let stream: AsyncStream<M>? =
        subscribe
        ? await mailroom.subscribe(
            to: M.self,
            from: room.map { .only($0) } ?? .everyone,
            bufferingPolicy: .bufferingNewest(1)
        )
        : nil
    if let room {
        return ThreadPoster {
            _ = stream
            mailroom.postSynchronously(M(), from: room)
        }
    }
    return ThreadPoster {
        _ = stream
        mailroom.postSynchronously(M())
    }
}

/// Thread `thread`'s poster on a type of its own, to every sender: concrete types, so that every
/// post runs specialised code, as an application's own types do.
func typeSyncPoster(_ thread: Int, on mailroom: Mailroom) async -> ThreadPoster {
    switch thread % 16 {
    case 0: await syncPoster(BlankBase.self, room: nil, on: mailroom)
    case 1: await syncPoster(Lane1.self, room: nil, on: mailroom)
    case 2: await syncPoster(Lane2.self, room: nil, on: mailroom)
    case 3: await syncPoster(Lane3.self, room: nil, on: mailroom)
    case 4: await syncPoster(Lane4.self, room: nil, on: mailroom)
    case 5: await syncPoster(Lane5.self, room: nil, on: mailroom)
    case 6: await syncPoster(Lane6.self, room: nil, on: mailroom)
    case 7: await syncPoster(Lane7.self, room: nil, on: mailroom)
    case 8: await syncPoster(Lane8.self, room: nil, on: mailroom)
    case 9: await syncPoster(Lane9.self, room: nil, on: mailroom)
    case 10: await syncPoster(Lane10.self, room: nil, on: mailroom)
    case 11: await syncPoster(Lane11.self, room: nil, on: mailroom)
    case 12: await syncPoster(Lane12.self, room: nil, on: mailroom)
    case 13: await syncPoster(Lane13.self, room: nil, on: mailroom)
    case 14: await syncPoster(Lane14.self, room: nil, on: mailroom)
    default: await syncPoster(Lane15.self, room: nil, on: mailroom)
    }
}

/// The posters for `threads` threads in `shape`, each thread's on one shared mailroom or, with
/// `separate`, the same posts each on a mailroom of its own (the ceiling: nothing shared); and the
/// mailrooms to close afterwards.
func threadPosters(_ shape: ThreadShape, threads: Int, separate: Bool) async -> ([ThreadPoster], [Mailroom]) {
    let shared = Mailroom()
    var mailrooms = [shared]
    var posters: [ThreadPoster] = []
    for thread in 0..<threads {
        let mailroom = separate && thread > 0 ? Mailroom() : shared
        if mailroom !== shared { mailrooms.append(mailroom) }
        switch shape {
        case .distinctRooms:
            posters.append(await syncPoster(BlankBase.self, room: thread, on: mailroom))
        case .distinctTypes:
            posters.append(await typeSyncPoster(thread, on: mailroom))
        case .historyRooms:
            if mailroom !== shared || thread == 0 { await mailroom.retainHistory(BlankBase.self, count: 1_000) }
            posters.append(await syncPoster(BlankBase.self, room: thread, on: mailroom))
        case .churning:
            posters.append(await syncPoster(BlankBase.self, room: thread, on: mailroom))
        case .sharedRoom:
            posters.append(thread == 0 ? await syncPoster(BlankBase.self, room: 0, on: mailroom) : posters[0])
        }
    }
    return (posters, mailrooms)
}

/// Posts per second of `posters`, one OS thread each, posting for `seconds` after all have started.
func threadedPostsPerSecond(_ posters: [ThreadPoster], seconds: Double) -> Double {
    let ready = Atomic(0)
    let go = Atomic(false)
    let stop = Atomic(false)
    let totals = Atomic(0)
    let finished = DispatchSemaphore(value: 0)
    for poster in posters {
        let thread = Thread {
            ready.add(1, ordering: .relaxed)
            while !go.load(ordering: .acquiring) {}
            var posts = 0
            // Checked every 64 posts, so the check is no part of the figure.
            while !stop.load(ordering: .relaxed) {
                for _ in 0..<64 { poster.post() }
                posts += 64
            }
            totals.add(posts, ordering: .relaxed)
            finished.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    while ready.load(ordering: .relaxed) < posters.count { usleep(100) }
    let started = ContinuousClock.now
    go.store(true, ordering: .releasing)
    usleep(UInt32(seconds * 1e6))
    stop.store(true, ordering: .relaxed)
    for _ in posters { finished.wait() }
    let elapsed = ContinuousClock.now - started
    let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(totals.load(ordering: .relaxed)) / elapsedSeconds
}

func runThreads(seconds: Double, rounds: Int, only: String?) async {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let counts = [1, 2, 4, 8, 16]
    print("Threads, \(cores) cores, postSynchronously for \(seconds) s per figure, best of \(rounds)")
    var best: [String: [Int: Double]] = [:]
    var churnCycles = 0
    let shapes = ThreadShape.allCases.filter { only == nil || $0.rawValue.contains(only!) }
    // Interleaved: each round measures every shape at every count, one mailroom then separate
    // ones, so the machine's drift over the run reaches both sides of every ratio alike.
    for _ in 0..<rounds {
        for threads in counts {
            for shape in shapes {
                for separate in shape == .sharedRoom ? [false] : [false, true] {
                    let (posters, mailrooms) = await threadPosters(shape, threads: threads, separate: separate)
                    // A task subscribes to other rooms of the type and drops each subscription, as
                    // connections come and go, for as long as the threads post.
                    let churn =
                        shape == .churning && !separate
                        ? Task.detached {
                            var cycle = 0
                            while !Task.isCancelled {
                                let stream = await mailrooms[0].subscribe(
                                    to: BlankBase.self,
                                    from: .only(1_000 + cycle % 64)
                                )
                                withExtendedLifetime(stream) {}
                                cycle += 1
                            }
                            return cycle
                        } : nil
                    let rate = threadedPostsPerSecond(posters, seconds: seconds)
                    churn?.cancel()
                    if let cycles = await churn?.value, threads == 16 { churnCycles = max(churnCycles, cycles) }
                    for mailroom in mailrooms { await mailroom.close() }
                    let key = shape.rawValue + (separate ? ", separate mailrooms" : "")
                    best[key, default: [:]][threads] = max(best[key]?[threads] ?? 0, rate)
                }
            }
        }
    }
    for shape in shapes {
        let rates = best[shape.rawValue] ?? [:]
        let separate = best[shape.rawValue + ", separate mailrooms"]
        let single = rates[1] ?? 1
        let cells = counts.map { threads in
            let rate = rates[threads] ?? 0
            var cell = String(format: "%d: %.2fx", threads, rate / single)
            if let ceiling = separate?[threads] { cell += String(format: " (%.2fx separate)", rate / ceiling) }
            return cell
        }
        print(
            "\(shape.rawValue): 1 thread \(String(format: "%.2f", single / 1e6)) M posts/s, 16 threads "
                + "\(String(format: "%.2f", (rates[16] ?? 0) / 1e6)) M/s | " + cells.joined(separator: ", ")
        )
        if shape == .churning {
            print("  subscriptions made and dropped meanwhile, 16 threads: \(churnCycles) in \(seconds) s")
        }
        if let separate {
            let cells = counts.map { String(format: "%d: %.2fx", $0, (separate[$0] ?? 0) / (separate[1] ?? 1)) }
            print(
                "  the same, separate mailrooms: 16 threads \(String(format: "%.2f", (separate[16] ?? 0) / 1e6)) M/s | "
                    + cells.joined(separator: ", ")
            )
        }
    }
}
