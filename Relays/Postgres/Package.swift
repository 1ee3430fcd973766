// swift-tools-version: 6.2
// AsyncMailPostgres: a relay that carries a mailroom's mail to every process connected to the same
// PostgreSQL channel. Its own package, so that AsyncMail itself keeps zero dependencies.
//   swift test --package-path Relays/Postgres   (needs PGHOST, PGPORT, PGUSER, PGDATABASE; see Scripts/postgres.sh)
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailPostgres",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMailPostgres", targets: ["AsyncMailPostgres"]),
        // Two processes exchanging mail through PostgreSQL: `swift run --package-path Relays/Postgres RelayPeer`.
        .executable(name: "RelayPeer", targets: ["RelayPeer"]),
        // The relay against bare postgres-nio NOTIFY/LISTEN, in one run: `swift run -c release ... RelayBench`.
        .executable(name: "RelayBench", targets: ["RelayBench"]),
    ],
    dependencies: [
        .package(path: "../.."),
        // The wire format and codec every relay shares.
        .package(path: "../Wire"),
        // Only the tests use it: a mailroom that carries ServiceContext, as an application's would.
        .package(path: "../../Observability"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "AsyncMailPostgres",
            dependencies: [
                .product(name: "AsyncMailRelay", package: "wire"),
                .product(name: "RelayWire", package: "wire"),
                .product(name: "AsyncMail", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "RelayPeer",
            dependencies: [
                "AsyncMailPostgres",
                .product(name: "AsyncMail", package: root),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "RelayBench",
            dependencies: [
                "AsyncMailPostgres",
                .product(name: "AsyncMail", package: root),
                .product(name: "RelayWire", package: "wire"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AsyncMailPostgresTests",
            dependencies: [
                "AsyncMailPostgres",
                .product(name: "AsyncMailRelay", package: "wire"),
                .product(name: "RelayWire", package: "wire"),
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
                .product(name: "RelayTesting", package: "wire"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncMailObservability", package: "observability"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
