// swift-tools-version: 6.2
// AsyncMail with swift-service-lifecycle: a `Service` that closes a mailroom at graceful shutdown.
// Its own package so that the root package keeps zero dependencies.
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailServiceLifecycle",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMailServiceLifecycle", targets: ["AsyncMailServiceLifecycle"])
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "AsyncMailServiceLifecycle",
            dependencies: [
                .product(name: "AsyncMail", package: root),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "AsyncMailServiceLifecycleTests",
            dependencies: [
                "AsyncMailServiceLifecycle",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
