// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "AsyncMail",
    // `Synchronization` (Mutex) sets the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMail", targets: ["AsyncMail"])
    ],
    targets: [
        .target(name: "AsyncMail"),
        .testTarget(name: "AsyncMailTests", dependencies: ["AsyncMail"]),
    ],
    swiftLanguageModes: [.v6]
)
