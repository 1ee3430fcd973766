// swift-tools-version: 6.2
// AsyncMail with swift-metrics and swift-distributed-tracing: a mailroom's posts and subscriptions as
// metrics, and the `ServiceContext` of each post carried to the code that handles it.
// Its own package so that the root package keeps zero dependencies.
//   swift test --package-path Observability
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailObservability",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMailObservability", targets: ["AsyncMailObservability"])
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "AsyncMailObservability",
            dependencies: [
                .product(name: "AsyncMail", package: root),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "AsyncMailObservabilityTests",
            dependencies: [
                "AsyncMailObservability",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
