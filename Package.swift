// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "AsyncMail",
    // `Synchronization` (Atomic) sets the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMail", targets: ["AsyncMail"]),
        // The NotificationCenter bridge; the core stays Foundation-free.
        .library(name: "AsyncMailFoundation", targets: ["AsyncMailFoundation"]),
        // Swift Testing helpers for code that posts and subscribes; imports the toolchain's `Testing`.
        .library(name: "AsyncMailTesting", targets: ["AsyncMailTesting"]),
    ],
    targets: [
        // The lock AsyncMail's locks are made of: a futex that does not convoy (see its header).
        .target(name: "CAsyncMail"),
        .target(name: "AsyncMail", dependencies: ["CAsyncMail"]),
        .target(name: "AsyncMailFoundation", dependencies: ["AsyncMail"]),
        .target(name: "AsyncMailTesting", dependencies: ["AsyncMail"]),
        // What this package's own test targets share beyond AsyncMailTesting (a lock TSan can see).
        .target(name: "TestSupport", dependencies: ["AsyncMail", "AsyncMailTesting"], path: "Tests/TestSupport"),
        .testTarget(name: "AsyncMailTests", dependencies: ["AsyncMail", "TestSupport"]),
        .testTarget(name: "AsyncMailFoundationTests", dependencies: ["AsyncMailFoundation", "TestSupport"]),
        .testTarget(name: "AsyncMailTestingTests", dependencies: ["AsyncMail", "AsyncMailTesting", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
