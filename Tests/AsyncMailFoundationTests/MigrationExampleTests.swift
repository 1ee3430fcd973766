import AsyncMail
import AsyncMailFoundation
import Foundation
import TestSupport
import Testing

// The block of "Migrating from NotificationCenter", run as written.

extension Notification.Name {
    static let processTerminated = Notification.Name("AsyncMailTests.processTerminated")
}

@Suite("Migrating from NotificationCenter, as written")
struct MigrationExampleTests {
    @Test("a notification you don't own arrives as typed mail")
    func bridging() async throws {
        let center = NotificationCenter()
        let mailroom = Mailroom()
        struct Terminated: Mail { let pid: Int32 }

        let forwarding = await mailroom.forward(.processTerminated, in: center) { note in
            (note.userInfo?["pid"] as? Int32).map(Terminated.init(pid:))
        }
        let terminated = await mailroom.subscribe(to: Terminated.self)
        center.post(name: .processTerminated, object: nil, userInfo: ["pid": Int32(42)])
        center.post(name: .processTerminated, object: nil, userInfo: [:])  // mapped to nil: skipped
        center.post(name: .processTerminated, object: nil, userInfo: ["pid": Int32(7)])
        #expect(try await terminated.first(2).map(\.pid) == [42, 7])
        forwarding.cancel()
    }
}
