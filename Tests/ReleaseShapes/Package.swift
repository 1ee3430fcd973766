// swift-tools-version: 6.2
// The code a user writes around AsyncMail's throwing calls, built with -c release as a server
// ships and run: Swift 6.3.1's optimiser crashed on one such shape that debug builds compiled
// (README.md beside this file).
//   swift run -c release --package-path Tests/ReleaseShapes ReleaseShapes
// It also depends on every other package of the repository, so that one resolution and one build
// folder build all their products (Scripts/build-packages.sh; .ci/run does it in release). The
// packages with executables only (the contract's peer, the examples, the benchmarks) are used by
// no target here: SwiftPM warns so, and builds their products by name.
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "ReleaseShapes",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(path: "../../ServiceLifecycle"),
        .package(path: "../../Observability"),
        .package(path: "../../Relays/Wire"),
        .package(path: "../../Relays/Postgres"),
        .package(path: "../../Relays/SQLite"),
        .package(path: "../../Relays/Contract"),
        .package(path: "../../Examples/ChatServer"),
        .package(path: "../../Examples/WebSocketChurn"),
        .package(path: "../../Benchmarks"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "ReleaseShapes",
            dependencies: [
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailPostgres", package: "postgres"),
                .product(name: "AsyncMailSQLite", package: "sqlite"),
                .product(name: "AsyncMailRelay", package: "wire"),
                .product(name: "AsyncMailServiceLifecycle", package: "servicelifecycle"),
                .product(name: "AsyncMailObservability", package: "observability"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
