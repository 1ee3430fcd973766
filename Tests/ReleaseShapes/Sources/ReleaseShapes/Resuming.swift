import AsyncMail

// How a server resumes a client from the position it sends back, written the ways a user writes
// it. Each function is one shape; main.swift runs them all.

struct ChatLine: Mail, Codable {
    let text: String
}

struct RoomID: Hashable, Sendable, Codable {
    let name: String
}

typealias Resumed = Resumption<BoundedStream<Positioned<ChatLine>>>

/// What a server tells a client whose position it could not resume from.
struct Reset: Error, Equatable {
    let reason: String
}

/// The chat example's shape, the one that crashed the optimiser when its helper was declared
/// `throws(PositionError)`: a guard that returns early, then a parse and a subscribe in one `do`,
/// and a catch that rethrows what it does not handle.
func resumeWithHelper(
    in room: RoomID,
    after text: Substring,
    mailroom: Mailroom
) async throws -> (Resumed, reset: Bool) {
    func subscribe(after position: MailPosition?) async throws -> Resumed {
        try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: position, backlog: .ending(past: 8))
    }
    guard !text.isEmpty else { return (try await subscribe(after: nil), false) }
    do {
        let position = text == "oldest" ? .oldestKept : try MailPosition(parsing: text)
        return (try await subscribe(after: position), false)
    } catch let error as PositionError {
        guard error.code != .noHistory else { throw error }
        return (try await subscribe(after: nil), true)
    }
}

/// The same without a helper, and a catch that inspects the code after a cast.
func resumeDirectly(in room: RoomID, after text: Substring, mailroom: Mailroom) async throws -> Resumed {
    guard !text.isEmpty else {
        return try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: nil, backlog: .ending(past: 8))
    }
    do {
        let position = try MailPosition(parsing: text)
        return try await mailroom.subscribe(
            to: ChatLine.self,
            from: .only(room),
            after: position,
            backlog: .ending(past: 8)
        )
    } catch {
        guard (error as? PositionError)?.code == .malformed else { throw error }
        return try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: nil, backlog: .ending(past: 8))
    }
}

/// A function with its own typed error, mapping the library's: a `switch` over the code.
func resumeTyped(in room: RoomID, after text: String, mailroom: Mailroom) async throws(Reset) -> Resumed {
    do {
        if text.isEmpty {
            return try await mailroom.subscribe(
                to: ChatLine.self,
                from: .only(room),
                after: nil,
                backlog: .ending(past: 8)
            )
        }
        let position = try MailPosition(parsing: text)
        return try await mailroom.subscribe(
            to: ChatLine.self,
            from: .only(room),
            after: position,
            backlog: .ending(past: 8)
        )
    } catch let error as PositionError {
        switch error.code {
        case .malformed, .otherMailType, .otherRoom, .notYetPosted: throw Reset(reason: error.reason)
        default: throw Reset(reason: "unexpected: \(error)")
        }
    } catch {
        throw Reset(reason: "\(error)")
    }
}

/// Many clients at once, each in a child task, each refusal kept as a value.
func resumeMany(_ texts: [String], in room: RoomID, mailroom: Mailroom) async throws -> [Result<UInt64?, Reset>] {
    try await withThrowingTaskGroup(of: (Int, Result<UInt64?, Reset>).self) { group in
        for (index, text) in texts.enumerated() {
            group.addTask {
                do throws(Reset) {
                    let resumed = try await resumeTyped(in: room, after: text, mailroom: mailroom)
                    return (index, .success(resumed.start?.sequence))
                } catch {
                    return (index, .failure(error))
                }
            }
        }
        var results = [Result<UInt64?, Reset>](repeating: .success(nil), count: texts.count)
        for try await (index, result) in group { results[index] = result }
        return results
    }
}

/// Reading a bounded stream after an earlier await, with a catch on the stream's typed error
/// (`BacklogLimitExceeded`) that rethrows what it does not handle; returns how many were read.
func readUntilTooSlow(_ resumed: Resumed, mailroom: Mailroom, room: RoomID) async throws -> Int {
    for text in ["a", "b", "c"] { await mailroom.post(ChatLine(text: text), from: room) }
    var read = 0
    do {
        for try await _ in resumed.mail {
            read += 1
            if read == 3 { break }
        }
    } catch {
        guard error.limit > 0 else { throw error }
        return -read
    }
    return read
}
