// A `Resumption` is the answer to a resume: its `gap` first, then its `mail`. Iterating it, or
// serving it, compiled to "does not conform to AsyncSequence" / "has no member 'serve'", which
// names neither fix; these declarations make the compiler name `.mail` instead (checked word for
// word in Tests/CompileFailures). The conformance is unavailable, so nothing can use it.

@available(
    *,
    unavailable,
    message:
        "a Resumption is not a sequence: read its gap, then iterate its mail: for await positioned in resumption.mail"
)
extension Resumption: AsyncSequence {
    public typealias Element = Stream.Element

    @available(
        *,
        unavailable,
        message:
            "a Resumption is not a sequence: read its gap, then iterate its mail: for await positioned in resumption.mail"
    )
    public func makeAsyncIterator() -> Stream.AsyncIterator {
        fatalError("unavailable")
    }
}

extension Resumption {
    @available(
        *,
        unavailable,
        message:
            "serve the resumption's mail, after telling the client its gap: resumption.mail.serve(delivering:receiving:)"
    )
    public func serve(
        delivering deliver: @escaping @Sendable (Stream.Element) async throws -> Void,
        receiving receive: @escaping @Sendable () async throws -> Void
    ) async -> ConnectionEnd {
        fatalError("unavailable")
    }
}
