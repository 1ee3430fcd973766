import AsyncMail
import Testing

/// A test trait that gives each test its own `Mailroom.shared`.
///
/// Code under test that posts to `Mailroom.shared` makes parallel tests hear each other's mail,
/// as `NotificationCenter.default` does, and such suites end up `.serialized`. With this trait,
/// `Mailroom.shared` is a fresh mailroom for the length of each test, in the test and in every
/// task it starts, child or unstructured (a `Task.detached` excepted: it inherits no task-local
/// values). The mailroom is closed when the test ends, so no stream outlives it.
///
/// ```swift
/// @Suite(.isolatedSharedMailroom)
/// struct CheckoutTests {
///     @Test func announcesTheOrder() async {
///         let placed = await Mailroom.shared.expectMail(OrderPlaced.self) {
///             await Checkout().place(42)  // posts to Mailroom.shared
///         }
///         #expect(placed.map(\.id) == [42])
///     }
/// }
/// ```
///
/// Cost outside tests: reading `Mailroom.shared` is one atomic load more than a stored constant
/// while no such test runs, and a task-local look-up while one does (the figures are in
/// `Benchmarks/README.md`); a post is unchanged.
public struct IsolatedSharedMailroom: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        let mailroom = Mailroom()
        do {
            try await Mailroom.withShared(mailroom) { try await function() }
        } catch {
            await mailroom.close()
            throw error
        }
        await mailroom.close()
    }
}

extension Trait where Self == IsolatedSharedMailroom {
    /// Each test gets its own `Mailroom.shared`; see ``IsolatedSharedMailroom``.
    public static var isolatedSharedMailroom: Self { IsolatedSharedMailroom() }
}
