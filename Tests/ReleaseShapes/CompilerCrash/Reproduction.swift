// Swift 6.3.1 crashes compiling this file with optimisation (signal 11 in LLVM's coroutine
// splitting, emitSetAndGetSwiftErrorValueAround, "While splitting coroutine … resume"):
//
//     swiftc -O Reproduction.swift     # crashes
//     swiftc -Onone Reproduction.swift # builds
//
// It uses nothing but the standard library. What it takes, each found necessary by removing it:
// - an untyped `async throws` function (a typed `throws(E)` one builds);
// - a throwing `await` on a path before a `do` block;
// - a `do` block whose error is inferred as one concrete error type `E` because every call in it
//   throws `E`: a synchronous `throws(E)` call and an asynchronous `throws(E)` call together
//   (either one alone builds; either one untyped builds);
// - `E` a struct holding a `String` (an enum, an `Int` or a class reference builds);
// - a `catch` that throws (the caught error, or another built from it).
// AsyncMail's public calls throw untyped errors so that code written around them cannot take
// this shape (Tests/ReleaseShapes/README.md).

struct E: Error {
    let code: String
}

@inline(never) @_optimize(none)
func parse(_ text: some StringProtocol) throws(E) -> Int {
    guard let number = Int(String(text)) else { throw E(code: "malformed") }
    return number
}

@inline(never) @_optimize(none)
func fetch(_ number: Int?) async throws(E) -> String {
    if number == 42 { throw E(code: "missing") }
    return "\(number ?? 0)"
}

func resume(_ text: Substring) async throws -> String {
    guard !text.isEmpty else { return try await fetch(nil) }
    do {
        return try await fetch(try parse(text))
    } catch {
        guard error.code != "missing" else { throw error }
        return try await fetch(nil)
    }
}

print(try await resume("3"))
