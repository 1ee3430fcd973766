@_spi(AsyncMailInternal) import AsyncMail
import AsyncMailTesting
import Testing

// The hook a relay's backpressure uses: every asynchronous post runs inside the registered
// admissions, on the poster's task; synchronous posts never do.
@Suite("Post admissions")
struct PostAdmissionTests {
    private struct Ping: Mail, Equatable { let number: Int }

    @TaskLocal private static var admitted = false

    @Test("an async post runs inside every admission, on its task; a synchronous one and a removed admission skip it")
    func admissionWrapsAsyncPosts() async throws {
        let mailroom = Mailroom()
        let seen = Guarded<[Bool]>([])
        // A tap filter runs at post time, on the posting task: it sees the admission's task-local.
        let tapped = await mailroom.tap { _ in
            seen.withLock { $0.append(PostAdmissionTests.admitted) }
            return false
        }
        let types = Guarded<[ObjectIdentifier]>([])
        let senders = Guarded<[String?]>([])
        let key = mailroom._admitPosts { type, sender, post in
            types.withLock { $0.append(type) }
            senders.withLock { $0.append(sender.map { "\($0)" }) }
            return await PostAdmissionTests.$admitted.withValue(true) { await post() }
        }
        let pings = await mailroom.subscribe(to: Ping.self)
        let receipt = await mailroom.post(Ping(number: 1))
        #expect(receipt.delivered == 1, "the admission returns the post's own receipt")
        await mailroom.post(contentsOf: [Ping(number: 2), Ping(number: 3)], from: "room")
        mailroom.postSynchronously(Ping(number: 4))
        mailroom._stopAdmitting(key)
        await mailroom.post(Ping(number: 5))
        #expect(try await pings.first(5).map(\.number) == [1, 2, 3, 4, 5])
        #expect(types.withLock { $0 } == [ObjectIdentifier(Ping.self), ObjectIdentifier(Ping.self)])
        #expect(senders.withLock { $0 } == [nil, "room"], "the sender as posted")
        #expect(seen.withLock { $0 } == [true, true, true, false, false])
        _ = tapped
    }
}
