/// A relay that could not start, or a flush that could not promise publication.
public enum RelayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The durable mode's table could not be created or read; often the role lacks `CREATE` on
    /// the schema. Create it beforehand with the statement in *Across Processes and Machines*.
    case tableSetupFailed(table: String, reason: String)
    /// ``PostgresRelay/flush()`` was called while the relay was not running, or it stopped first.
    case notRunning
    /// ``PostgresRelay/flush()``: this many mails posted since the previous flush returned were
    /// given up (too large, the outbound queue full, or dropped by a failed ephemeral publish),
    /// each also reported as its ``RelayEvent``. The count may include mail posted while the
    /// flush waited.
    case notRelayed(mails: Int)

    public var description: String {
        switch self {
        case .tableSetupFailed(let table, let reason): "could not set up the relay table \(table): \(reason)"
        case .notRunning: "the relay is not running"
        case .notRelayed(let mails): "\(mails) mails were not relayed"
        }
    }
}
