/// A continuation whose element type has been erased, so streams of every mail type can
/// be finished together (by `close()` or when a pinned sender goes away).
@usableFromInline
protocol Finishable: Sendable {
    func finish()
}

extension AsyncStream.Continuation: Finishable {}
