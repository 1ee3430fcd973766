extension DroppingStream {
    /// Serves one connection that keeps up rather than being ended: delivers this subscription's
    /// mail and losses outbound while `receiving` runs inbound, until either end ends, then ends
    /// the other and removes the subscription.
    ///
    /// It works as ``BoundedStream/serve(delivering:receiving:)`` does, but a consumer that falls
    /// behind is not an end: its backlog drops mail, and `deliver` is called with each loss in
    /// order, as a ``Delivery/lost(_:)``, where the lost mail stood, typically to tell the client.
    /// The connection ends when the client leaves, the mailroom closes, `deliver` throws, or the
    /// calling task is cancelled. A client that stops reading holds at most the backlog's limit
    /// of mail, and its stuck write holds nothing else.
    ///
    /// - Parameters:
    ///   - deliver: Called with each mail or loss in turn, in the mailroom's one order; typically
    ///     a socket write. It must end promptly when its task is cancelled.
    ///   - receive: The inbound loop; it must also stop when cancelled.
    /// - Returns: Which end ended first. Mail still buffered when it returns is discarded.
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(room), backlog: .droppingOldest(past: 256))
    /// let end = await inbox.serve { delivery in
    ///     switch delivery {
    ///     case .mail(let line): try await socket.send(line.text)
    ///     case .lost(let loss): try await socket.send(#"{"lost": \#(loss.count)}"#)
    ///     }
    /// } receiving: {
    ///     for try await text in socket.messages { await mailroom.post(ChatLine(text: text), from: room) }
    /// }
    /// ```
    public func serve(
        delivering deliver: @escaping @Sendable (Delivery<Content>) async throws -> Void,
        receiving receive: @escaping @Sendable () async throws -> Void
    ) async -> ConnectionEnd {
        let outbound: @Sendable () async -> ConnectionEnd = {
            do {
                for await delivery in self { try await deliver(delivery) }
                return ConnectionEnd(.subscriptionEnded)
            } catch {
                return ConnectionEnd(.failed, error: error)
            }
        }
        return await ConnectionEnd.first(of: [outbound], receiving: receive, thenFinish: subscription._continuation)
    }
}
