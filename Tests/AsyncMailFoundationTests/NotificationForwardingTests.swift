import AsyncMail
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import AsyncMailFoundation

struct Reading: Mail, Equatable {
    let value: Int
}

/// Counts how often a transform ran; NotificationCenter calls it synchronously inside `post`.
final class Calls: Sendable {
    let count = Atomic(0)
}

final class Sensor: Sendable {}

let readingName = Notification.Name("AsyncMailTests.reading")

func reading(_ calls: Calls) -> @Sendable (Notification) -> Reading? {
    { note in
        calls.count.add(1, ordering: .relaxed)
        return (note.userInfo?["value"] as? Int).map(Reading.init(value:))
    }
}

@Suite("NotificationCenter bridge", .timeLimit(.minutes(1)))
struct NotificationForwardingTests {
    @Test("notifications arrive as typed mail, in order, from the moment forward returns")
    func forwardsInOrder() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let readings = await mailroom.subscribe(to: Reading.self)
        let calls = Calls()
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(calls))

        for value in 0..<100 { center.post(name: readingName, object: nil, userInfo: ["value": value]) }
        center.post(name: readingName, object: nil, userInfo: ["other": 1])  // transformed to nil: skipped
        center.post(name: readingName, object: nil, userInfo: ["value": 100])

        let received = await readings.prefix(101).reduce(into: [Int]()) { $0.append($1.value) }
        #expect(received == Array(0...100))
        #expect(calls.count.load(ordering: .relaxed) == 102)
        forwarding.cancel()
    }

    @Test("forwarding can be limited to one object")
    func oneObject() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let sensor = Sensor()
        let readings = await mailroom.subscribe(to: Reading.self)
        let forwarding = await mailroom.forward(readingName, object: sensor, in: center, as: reading(Calls()))
        center.post(name: readingName, object: Sensor(), userInfo: ["value": 1])
        center.post(name: readingName, object: sensor, userInfo: ["value": 2])
        var iterator = readings.makeAsyncIterator()
        #expect(await iterator.next() == Reading(value: 2))
        forwarding.cancel()
    }

    @Test("mail forwarded for one object is posted from it, so a subscription to that sender hears it")
    func objectIsTheSender() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let sensor = Sensor()
        let fromSensor = await mailroom.subscribe(to: Reading.self, from: .only(sensor))
        let fromAnySensor = await mailroom.subscribe(to: Reading.self, fromAny: Sensor.self)
        let forwarding = await mailroom.forward(readingName, object: sensor, in: center, as: reading(Calls()))
        center.post(name: readingName, object: sensor, userInfo: ["value": 3])
        #expect(try await fromSensor.first(1) == [Reading(value: 3)])
        #expect(try await fromAnySensor.first(1).map { $0.sender === sensor } == [true])
        forwarding.cancel()
    }

    @Test("the bridge holds its object weakly")
    func objectHeldWeakly() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        var sensor: Sensor? = Sensor()
        weak let released = sensor
        let forwarding = await mailroom.forward(readingName, object: sensor, in: center, as: reading(Calls()))
        sensor = nil
        #expect(released == nil, "the forwarding does not keep its object alive")
        forwarding.cancel()
    }

    @Test("cancelling the forwarding removes the NotificationCenter observer")
    func cancelRemovesObserver() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let calls = Calls()
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(calls))
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        #expect(calls.count.load(ordering: .relaxed) == 1)

        forwarding.cancel()
        await forwarding.waitUntilEnded()
        center.post(name: readingName, object: nil, userInfo: ["value": 2])
        #expect(calls.count.load(ordering: .relaxed) == 1, "the observer is gone")
    }

    @Test("closing the mailroom removes the NotificationCenter observer")
    func closeRemovesObserver() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let calls = Calls()
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(calls))
        await mailroom.close()
        await forwarding.waitUntilEnded()
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        #expect(calls.count.load(ordering: .relaxed) == 0, "the observer is gone")
    }

    @Test("the observer is removed before cancel() returns: the next notification is not transformed")
    func cancelRemovesBeforeReturning() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let calls = Calls()
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(calls))
        forwarding.cancel()
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        #expect(calls.count.load(ordering: .relaxed) == 0)
        forwarding.cancel()  // idempotent
        try await withTimeout { await forwarding.waitUntilEnded() }
    }

    @Test("the observer is removed before close() returns: the next notification is not transformed")
    func closeRemovesBeforeReturning() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let calls = Calls()
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(calls))
        await mailroom.close()
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        #expect(calls.count.load(ordering: .relaxed) == 0)
        try await withTimeout { await forwarding.waitUntilEnded() }
        // Forwarding into a closed mailroom is stopped from the start.
        let late = await mailroom.forward(readingName, in: center, as: reading(calls))
        center.post(name: readingName, object: nil, userInfo: ["value": 2])
        #expect(calls.count.load(ordering: .relaxed) == 0)
        try await withTimeout { await late.waitUntilEnded() }
    }

    @Test("a running bridge does not keep its mailroom alive; freeing the mailroom stops the bridge")
    func bridgeHoldsMailroomWeakly() async throws {
        let center = NotificationCenter()
        let calls = Calls()
        var mailroom: Mailroom? = Mailroom()
        weak let gone = mailroom
        let readings = await mailroom!.subscribe(to: Reading.self)
        let forwarding = await mailroom!.forward(readingName, in: center, as: reading(calls))
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        var iterator = readings.makeAsyncIterator()
        #expect(await iterator.next() == Reading(value: 1))
        mailroom = nil
        #expect(gone == nil, "the bridge must not keep the mailroom alive")
        #expect(try await readings.collect() == [], "its consumers are not left waiting")
        try await withTimeout { await forwarding.waitUntilEnded() }
        center.post(name: readingName, object: nil, userInfo: ["value": 2])
        #expect(calls.count.load(ordering: .relaxed) == 1, "the observer is gone")
    }

    @Test("forward called from an already-cancelled task is live on return")
    func liveFromCancelledTask() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let readings = await mailroom.subscribe(to: Reading.self)
        let forwarding = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let forwarding = await mailroom.forward(readingName, in: center, as: reading(Calls()))
            center.post(name: readingName, object: nil, userInfo: ["value": 7])
            return forwarding
        }.value
        #expect(try await readings.first(1) == [Reading(value: 7)])
        forwarding.cancel()
    }
    @Test("a discarded handle forwards until the mailroom closes")
    func discardedHandleForwards() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let readings = await mailroom.subscribe(to: Reading.self)
        let calls = Calls()
        _ = await mailroom.forward(readingName, in: center, as: reading(calls))
        center.post(name: readingName, object: nil, userInfo: ["value": 1])
        center.post(name: readingName, object: nil, userInfo: ["value": 2])
        #expect(try await readings.first(2) == [Reading(value: 1), Reading(value: 2)])
        await mailroom.close()
        center.post(name: readingName, object: nil, userInfo: ["value": 3])
        #expect(calls.count.load(ordering: .relaxed) == 2, "close() removed the observer")
    }

    @Test("bridged mail takes its place in the one order when the notification is posted")
    func bridgedMailKeepsItsPlace() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        let readings = await mailroom.subscribe(to: Reading.self)
        let forwarding = await mailroom.forward(readingName, in: center, as: reading(Calls()))
        // One thread: 1,000 notifications, then a direct post; the direct one must come last.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                for value in 0..<1_000 { center.post(name: readingName, object: nil, userInfo: ["value": value]) }
                mailroom.postSynchronously(Reading(value: -1))
                done.resume()
            }
        }
        let received = try await readings.first(1_001).map(\.value)
        #expect(received.firstIndex(of: -1) == 1_000, "the direct post came after every bridged one")
        #expect(received.filter { $0 >= 0 } == Array(0..<1_000))
        forwarding.cancel()
    }
}
