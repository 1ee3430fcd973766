import Testing

@testable import AsyncMail

/// `Ring`, the store of a room's history: its order across wrap-around and growth, and that it
/// hands out what it drops rather than destroying it.
@Suite("Ring: a room's history store")
struct RingTests {
    /// Counts its live instances, so a test sees when a ring destroys an element.
    final class Counted {
        let value: Int
        let live: Counter
        init(_ value: Int, _ live: Counter) {
            self.value = value
            self.live = live
            live.add(1)
        }
        deinit { live.add(-1) }
    }

    final class Counter {
        var count = 0
        func add(_ delta: Int) { count += delta }
    }

    @Test("elements stay oldest first across wrap-around and growth")
    func orderAcrossWrapAndGrowth() {
        let ring = Ring<Int>()
        var model: [Int] = []
        var next = 0
        // Appends and drops in an uneven rhythm, so the head wraps before, during and after growth.
        for round in 0..<200 {
            for _ in 0..<(round % 5 + 1) {
                ring.append(next)
                model.append(next)
                next += 1
            }
            for _ in 0..<(round % 3) where !model.isEmpty {
                #expect(ring.removeFirst() == model.removeFirst())
            }
            #expect(ring.count == model.count)
            #expect((0..<ring.count).map { ring[$0] } == model)
            #expect(ring.elements(from: model.count / 2) == Array(model.dropFirst(model.count / 2)))
        }
        #expect(ring.elements(from: ring.count) == [])
        #expect(ring.removeAll() == model)
        #expect(ring.count == 0)
        ring.append(-1)
        #expect(ring.removeAll() == [-1])
    }

    @Test("what it drops is moved out, not destroyed; what is left goes with the ring")
    func dropsAreHandedOut() {
        let live = Counter()
        var ring: Ring<Counted>? = Ring()
        for value in 0..<10 { ring!.append(Counted(value, live)) }
        #expect(live.count == 10)
        var handedOut = [ring!.removeFirst(), ring!.removeFirst()]
        #expect(handedOut.map(\.value) == [0, 1])
        #expect(live.count == 10, "the ring holds no copy of what it handed out")
        handedOut.removeAll()
        #expect(live.count == 8)
        handedOut = ring!.removeAll()
        #expect(handedOut.map(\.value) == Array(2..<10))
        for value in 10..<13 { ring!.append(Counted(value, live)) }
        handedOut.removeAll()
        #expect(live.count == 3)
        ring = nil
        #expect(live.count == 0, "the ring's deinit destroys what it still held")
    }
}
