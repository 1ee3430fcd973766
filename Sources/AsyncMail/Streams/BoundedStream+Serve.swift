extension BoundedStream {
    /// Serves one connection: delivers this subscription's mail outbound while `receiving` runs
    /// inbound, until either end ends, then ends the other and removes the subscription.
    ///
    /// A connection has two ends, and either can end first: the client leaves (`receiving`
    /// returns or throws), the consumer falls behind its backlog limit, the mailroom closes, or
    /// the server shuts down (the calling task is cancelled). Whichever comes first, `serve`
    /// cancels the other end's work, finishes the subscription, waits for both to stop and says
    /// why in the returned ``ConnectionEnd``. It never leaves a subscription behind a departed
    /// client, and a client that stops reading cannot hold it: once the backlog limit is passed
    /// it returns even while `delivering` is stuck writing to that client.
    ///
    /// - Parameters:
    ///   - deliver: Called with each mail in turn, in the mailroom's one order; typically a
    ///     socket write. It must end promptly when its task is cancelled, as NIO and Hummingbird
    ///     writers do: `serve` waits for it. Under a mailroom with a ``MailroomInstrumentation``,
    ///     each call runs inside the context its mail was posted in, so the write continues the
    ///     poster's trace.
    ///   - receive: The inbound loop, such as reading the client's frames and posting them. It
    ///     must also stop when cancelled. Mail it posts to this subscription's own room reaches
    ///     this connection too: the subscription is live before `receive` starts.
    /// - Returns: Which end ended first. Mail still buffered when it returns is discarded.
    ///
    /// Subscribe first, then serve, in the same task: a subscription made inside a task that has
    /// not started yet misses everything posted before it starts.
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(room), backlog: .ending(past: 4_096))
    /// let end = await inbox.serve { line in
    ///     try await socket.send(line.text)
    /// } receiving: {
    ///     for try await text in socket.messages { await mailroom.post(ChatLine(text: text), from: room) }
    /// }
    /// ```
    public func serve(
        delivering deliver: @escaping @Sendable (Element) async throws -> Void,
        receiving receive: @escaping @Sendable () async throws -> Void
    ) async -> ConnectionEnd {
        // The watcher is out of band, so that an overflow ends the connection even while
        // `deliver` is blocked on a client that stopped reading, and the outbound loop never sees it.
        let watcher: @Sendable () async -> ConnectionEnd = {
            switch await endSignal.ended() {
            case .backlogLimitExceeded:
                ConnectionEnd(.backlogLimitExceeded, error: BacklogLimitExceeded(limit: backlogLimit))
            case .finished: ConnectionEnd(.subscriptionEnded)
            }
        }
        let outbound: @Sendable () async -> ConnectionEnd = {
            do {
                if let contexts {
                    for try await delivery in withContexts {
                        try await Self.deliver(delivery, with: deliver, inside: contexts.instrumentation)
                    }
                } else {
                    for try await mail in self { try await deliver(mail) }
                }
                return ConnectionEnd(.subscriptionEnded)
            } catch let error as BacklogLimitExceeded {
                return ConnectionEnd(.backlogLimitExceeded, error: error)
            } catch {
                return ConnectionEnd(.failed, error: error)
            }
        }
        // Ending the subscription also wakes the watcher.
        return await ConnectionEnd.first(of: [watcher, outbound], receiving: receive, thenFinish: continuation)
    }

    /// One delivery inside the context its mail was posted in; the error, if any, is rethrown
    /// outside it.
    private static func deliver(
        _ delivery: Contextual<Element>,
        with deliver: @Sendable (Element) async throws -> Void,
        inside instrumentation: any MailroomInstrumentation
    ) async throws {
        var failure: (any Error)?
        await instrumentation.withContext(delivery.context) {
            do { try await deliver(delivery.mail) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}
