@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

/// One row of a relay's table as read, whatever the engine; not yet trusted: every number in it
/// comes from the database, which any process that can open it may have written.
@_spi(AsyncMailRelay)
public struct StoredRow: Sendable, Equatable {
    public let id: Int64
    /// The payload's size in bytes.
    public let bytes: Int
    /// Nil when it is larger than the limit (and was not transferred), or not text.
    public let payload: String?
    /// The table's number of its first mail, and how many it holds.
    public let channelFirst: Int64?
    public let mails: Int64?
    /// For a type with shared positions: its room's key (see `RoomStream`), and the positions
    /// of its mails in the room.
    public let stream: String?
    public let streamEpoch: Int64?
    public let streamFirst: Int64?

    public init(
        id: Int64,
        bytes: Int,
        payload: String?,
        channelFirst: Int64?,
        mails: Int64?,
        stream: String?,
        streamEpoch: Int64?,
        streamFirst: Int64?
    ) {
        self.id = id
        self.bytes = bytes
        self.payload = payload
        self.channelFirst = channelFirst
        self.mails = mails
        self.stream = stream
        self.streamEpoch = streamEpoch
        self.streamFirst = streamFirst
    }
}

/// One counter of a relay's table: `stream` empty for the whole table, else a room's key (see
/// `RoomStream`); untrusted, like a row.
@_spi(AsyncMailRelay)
public struct StoredCounter: Sendable, Equatable {
    public let stream: String
    public let last: Int64
    public let epoch: Int64

    public init(stream: String, last: Int64, epoch: Int64) {
        self.stream = stream
        self.last = last
        self.epoch = epoch
    }
}

/// How far a reader has read a table: the last row's id, and the table's number of the last
/// mail. A row numbered past it, or the table's counter past it when the reader comes back,
/// means rows deleted by the retention before they were read, and says exactly how many mails.
@_spi(AsyncMailRelay)
public final class RowCursor: Sendable {
    private struct State {
        var cursor: Int64 = 0
        var channelRead: Int64 = 0
    }

    private let state = Guarded(State())

    public init() {}

    /// The id of the last row read.
    public var cursor: Int64 { state.withLock { $0.cursor } }

    /// Starts reading after `id`, the table's numbers after `channelLast`.
    public func start(after id: Int64, channelLast: Int64) {
        state.withLock { ($0.cursor, $0.channelRead) = (id, channelLast) }
    }

    /// Moves past `row` and its mails' numbers, and returns how many mails were skipped:
    /// deleted before they were read. A row without numbers, or with numbers no relay writes,
    /// moves no number. A row that is not `genuine` (its payload was rejected: another key's, a
    /// forgery) moves the numbers only when it follows on from the last read: it can then skip
    /// none, and a forged far number cannot report a false loss, while a rejected row written by
    /// a relay (with the wrong key, say) is not reported as deleted on top of being rejected.
    public func pass(_ row: StoredRow, genuine: Bool) -> Int {
        state.withLock { state in
            state.cursor = row.id
            guard let first = row.channelFirst, let mails = row.mails, first >= 1, mails >= 1,
                mails <= Int64(WireLimits.maximumNumber), first <= Int64.max - mails,
                genuine || first == state.channelRead + 1
            else { return 0 }
            // Below what was read: the counters were made anew (the table starts again).
            let missed = first > state.channelRead ? first - state.channelRead - 1 : 0
            state.channelRead = first + mails - 1
            return Int(clamping: missed)
        }
    }

    /// After catching up on coming back: how many of the table's mails up to `counters` (read
    /// before the catch-up) were deleted before this reader read them, which no later row can
    /// say when none was posted since.
    public func settle(_ counters: [StoredCounter]) -> Int {
        guard let channel = counters.first(where: { $0.stream.isEmpty }), channel.last >= 0 else { return 0 }
        return state.withLock { state in
            guard channel.last > state.channelRead else { return 0 }
            defer { state.channelRead = channel.last }
            return Int(clamping: channel.last - state.channelRead)
        }
    }
}
