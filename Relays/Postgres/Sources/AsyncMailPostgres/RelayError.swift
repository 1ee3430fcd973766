/// A relay that could not start.
public enum RelayError: Error, Sendable, CustomStringConvertible {
    /// The durable mode's table could not be created or read; often the role lacks `CREATE` on
    /// the schema. Create it beforehand with the statement in *Across Processes and Machines*.
    case tableSetupFailed(table: String, reason: String)

    public var description: String {
        switch self {
        case .tableSetupFailed(let table, let reason): "could not set up the relay table \(table): \(reason)"
        }
    }
}
