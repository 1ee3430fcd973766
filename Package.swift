// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "AsyncMail",
    // `Synchronization` (Mutex) sets the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMail", targets: ["AsyncMail"]),
        // The NotificationCenter bridge; the core stays Foundation-free.
        .library(name: "AsyncMailFoundation", targets: ["AsyncMailFoundation"]),
    ],
    targets: [
        .target(name: "AsyncMail"),
        .target(name: "AsyncMailFoundation", dependencies: ["AsyncMail"]),
        // Waiting helpers (a loud timeout around a real event) shared by both test targets.
        .target(name: "TestSupport", dependencies: ["AsyncMail"], path: "Tests/TestSupport"),
        .testTarget(name: "AsyncMailTests", dependencies: ["AsyncMail", "TestSupport"]),
        .testTarget(name: "AsyncMailFoundationTests", dependencies: ["AsyncMailFoundation", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
