import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How long each of a suite's waits took against its deadline, written where
/// `ASYNCMAIL_WAIT_LOG` points, so that a deadline too close to its event shows before it fails.
///
/// Off unless the variable names a file. Each wait appends one line: the caller's
/// `fileID:line`, the limit and the time taken, in seconds, separated by tabs. Lines are single
/// appends, so parallel tests (and parallel test processes) never interleave them.
/// `Scripts/soak-tests.sh` sets it and lists every wait that took more than a tenth of its limit.
enum WaitLog {
    /// The log's file descriptor, opened once; nil when off or when the file cannot be opened.
    private static let descriptor: Int32? = {
        guard let path = getenv("ASYNCMAIL_WAIT_LOG"), path.pointee != 0 else { return nil }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        return descriptor >= 0 ? descriptor : nil
    }()

    /// Appends one wait: where it was, its limit and how long it took.
    static func record(_ sourceLocation: SourceLocation, limit: Duration, took elapsed: Duration) {
        guard let descriptor else { return }
        let line = "\(sourceLocation.fileID):\(sourceLocation.line)\t\(seconds(limit))\t\(seconds(elapsed))\n"
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
