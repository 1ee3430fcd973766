/// A subscription that takes positions: what it missed, if anything, and its mail.
///
/// ``gap`` is known when the subscription is made, before any mail: it says the position was
/// older than the history keeps (and how many mails were missed) or of another epoch. ``mail``
/// then yields what the history keeps after the position, then live mail, each with its position,
/// with no gap and no mail twice. `Stream` is an `AsyncStream` of ``Positioned`` mail, or a
/// ``BoundedStream`` of it for a subscription with a backlog limit.
///
/// ```swift
/// let resumed = try await mailroom.subscribe(to: ChatLine.self, after: lastSeen)
/// if let gap = resumed.gap { await client.send(reset: gap.missed) }
/// for await line in resumed.mail { await client.send(line.mail.text, at: line.position) }
/// ```
public struct Resumption<Stream: AsyncSequence & Sendable>: Sendable {
    /// What could not be given, or nil when nothing was missed.
    public let gap: HistoryGap?
    /// The kept mail after the position, then live mail, each with its position.
    public let mail: Stream

    init(gap: HistoryGap?, mail: Stream) {
        self.gap = gap
        self.mail = mail
    }
}
