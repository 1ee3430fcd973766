import AsyncMailTesting
import Testing

@testable import AsyncMail

// The code blocks of "Coming Back: Positions and History", run as written (see
// `ArticleExampleTests.swift` for how CI checks that they stay so).

/// A client's side of a connection, for the article: what it was sent.
private final class FakeClient: Sendable {
    let frames = Locked<[String]>([])
    func send(_ frame: String) async { frames.withLock { $0.append(frame) } }
}

@Suite("The Coming Back article's examples")
struct HistoryArticleTests {
    @Test("keep, hand out positions, resume after the last one seen")
    func keepAndResume() async throws {
        let mailroom = Mailroom()
        let lobby = RoomID("lobby")
        let client = FakeClient()
        // snippet.show
        await mailroom.retainHistory(ChatLine.self, count: 1_000, maxAge: .seconds(600))
        // snippet.hide
        let connection = Task {
            // snippet.show
            let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
            for await line in resumed.mail {
                await client.send(#"{"position": "\#(line.position)", "text": "\#(line.mail.text)"}"#)
            }
            // snippet.hide
        }
        try await waitUntil { await mailroom.subscriberCount(ChatLine.self) == 1 }
        await mailroom.post(ChatLine(text: "hello"), from: lobby)
        await mailroom.post(ChatLine(text: "again"), from: lobby)
        try await waitUntil { client.frames.withLock { $0.count } == 2 }
        connection.cancel()
        let lastSeen = try MailPosition(parsing: client.frames.withLock { $0[0] }.split(separator: "\"")[3])
        await mailroom.post(ChatLine(text: "while away"), from: lobby)

        // snippet.show
        // The client hands back the last position it saw, as a string: untrusted input.
        let query: String = lastSeen.description
        let position: MailPosition
        do {
            position = try MailPosition(parsing: query)
        } catch {
            return  // malformed (a PositionError: its reason says how): tell the client to start afresh
        }
        let catchingUp = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: position)
        if let gap = catchingUp.gap {
            print("missed:", gap.missed.map(String.init) ?? "unknown")  // told first, then what is kept
        }
        // snippet.hide
        #expect(catchingUp.gap == nil)
        #expect(try await catchingUp.mail.first(2).map(\.mail.text) == ["again", "while away"])
    }

    @Test("a gap is reported first, with the count, and refusals are typed")
    func gapsAndRefusals() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(ChatLine.self, count: 2)
        let first = try await mailroom.subscribe(to: ChatLine.self, after: nil)
        for text in ["a", "b", "c", "d", "e"] { await mailroom.post(ChatLine(text: text)) }
        let positionOfA = try await first.mail.first(1)[0].position
        // snippet.show
        let resumed = try await mailroom.subscribe(to: ChatLine.self, after: positionOfA)
        #expect(resumed.gap == HistoryGap(code: .expired, missed: 2))  // b and c are no longer kept
        #expect(try await resumed.mail.first(2).map(\.mail.text) == ["d", "e"])
        // snippet.hide
        // snippet.show
        do {
            _ = try await mailroom.subscribe(to: ChatLine.self, after: MailPosition(parsing: "not-a-position"))
        } catch let error as PositionError {
            #expect(error.code == .malformed)  // never a crash: a position comes from a client
        }
        // snippet.hide
    }

    @Test("a client that heard nothing comes back with its start; a newcomer asks for what is kept")
    func startAndOldestKept() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(ChatLine.self, count: 100)
        let (lobby, hall) = (RoomID("lobby"), RoomID("hall"))
        let client = FakeClient()
        // snippet.show
        let joined = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
        if let start = joined.start { await client.send(#"{"start": "\#(start)"}"#) }  // before any line
        // snippet.hide
        let start = try #require(joined.start)
        await mailroom.post(ChatLine(text: "while away"), from: lobby)
        for index in 1...50 { await mailroom.post(ChatLine(text: "\(index)"), from: hall) }  // another room
        let back = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: start)
        #expect(back.gap == nil, "the hall's lines are not the lobby's")
        #expect(try await back.mail.first(1).map(\.mail.text) == ["while away"])
        // snippet.show
        let newcomer = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: .oldestKept)
        // snippet.hide
        #expect(newcomer.gap == nil)
        #expect(try await newcomer.mail.first(1).map(\.mail.text) == ["while away"])
        withExtendedLifetime(joined) {}
    }

    @Test("a subscription to every room sees the type's positions, and a room's position is refused there")
    func severalRooms() async throws {
        let mailroom = Mailroom()
        await mailroom.retainHistory(ChatLine.self, count: 100)
        let lobby = RoomID("lobby")
        let inLobby = try await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
        // snippet.show
        let everyRoom = try await mailroom.subscribe(to: ChatLine.self, after: nil)
        await mailroom.post(ChatLine(text: "hi"), from: lobby)
        let typePosition = try await everyRoom.mail.first(1)[0].position  // the type's, across rooms
        let roomPosition = try await inLobby.mail.first(1)[0].position  // the lobby's own
        await #expect(throws: PositionError.severalRooms) {
            try await mailroom.subscribe(to: ChatLine.self, after: roomPosition)
        }
        // snippet.hide
        #expect(typePosition != roomPosition)
        #expect(try await mailroom.subscribe(to: ChatLine.self, after: typePosition).gap == nil)
    }
}
