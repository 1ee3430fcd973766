// swift-tools-version: 6.2
// A WebSocket chat server on AsyncMail: the reference for serving one subscription per connection.
// Run it: `swift run --package-path Examples/ChatServer ChatServer`; test it: `Examples/ChatServer/test.sh`.
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "ChatServer",
    platforms: [.macOS(.v15)],
    products: [
        // Explicit, so that Tests/ReleaseShapes can build it too (Scripts/build-packages.sh).
        .executable(name: "ChatServer", targets: ["ChatServer"])
    ],
    dependencies: [
        .package(path: "../.."),
        .package(path: "../../ServiceLifecycle"),
        .package(path: "../../Relays/Postgres"),
        .package(path: "../../Relays/SQLite"),
        .package(path: "../../Observability"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", exact: "2.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .executableTarget(
            name: "ChatServer",
            dependencies: [
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailServiceLifecycle", package: "servicelifecycle"),
                .product(name: "AsyncMailPostgres", package: "postgres"),
                .product(name: "AsyncMailSQLite", package: "sqlite"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncMailObservability", package: "observability"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
