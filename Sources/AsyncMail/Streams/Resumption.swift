/// A subscription that takes positions: what it missed, if anything, where it starts, and its mail.
///
/// ``gap`` and ``start`` are known when the subscription is made, before any mail: ``gap`` says
/// the position was older than the room keeps (and how many mails were missed) or of another
/// epoch; ``start`` is the position its mail follows, to hand a client that may leave before
/// any mail arrives. ``mail`` then yields what the history keeps after the position, then live
/// mail, each with its position, with no gap and no mail twice. `Stream` is an `AsyncStream` of
/// ``Positioned`` mail, or a ``BoundedStream`` of it for a subscription with a backlog limit.
///
/// ```swift
/// let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: lastSeen)
/// if let gap = resumed.gap { await client.send(reset: gap.missed) }
/// await client.send(start: resumed.start)
/// for await line in resumed.mail { await client.send(line.mail.text, at: line.position) }
/// ```
public struct Resumption<Stream: AsyncSequence & Sendable>: Sendable {
    /// What could not be given, or nil when nothing was missed.
    public let gap: HistoryGap?
    /// The position the subscription's mail follows: resuming after it later gives everything
    /// posted from here on. The room's position for a subscription to one room (sequence 0 in a
    /// room nothing was posted to), the type's for one that hears several. While a relay shares
    /// the type's positions, a room its store has not numbered yet starts at the room's beginning
    /// (epoch 0, sequence 0), which resumes in any process sharing the store, after a restart
    /// too, with every mail posted to the room since. Nil only when the mailroom was closed.
    public let start: MailPosition?
    /// The kept mail after the position, then live mail, each with its position.
    public let mail: Stream

    init(gap: HistoryGap?, start: MailPosition?, mail: Stream) {
        self.gap = gap
        self.start = start
        self.mail = mail
    }
}
