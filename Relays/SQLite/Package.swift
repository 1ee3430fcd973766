// swift-tools-version: 6.2
// AsyncMailSQLite: a relay that carries a mailroom's mail between the processes that open the same
// SQLite file on one host, with no server. Its own package, so that AsyncMail itself keeps zero
// dependencies. SQLite comes with sqlite-nio, which compiles the SQLite amalgamation from source:
// a fresh machine needs no system library. The relay runs that SQLite through sqlite-nio's C module
// (`import VaporCSQLite`, which the SQLiteNIO product brings), with statements of its own kept
// prepared (SQLiteHandle): one copy of SQLite in the process, whose file locks every connection sees.
//   swift test --package-path Relays/SQLite
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailSQLite",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMailSQLite", targets: ["AsyncMailSQLite"]),
        // The README's two-process demo: `swift run --package-path Relays/SQLite SQLitePeer listen 3`.
        .executable(name: "SQLitePeer", targets: ["SQLitePeer"]),
        // The storage and wake-ups between two processes, measured: `swift run -c release ... SQLiteBench`.
        .executable(name: "SQLiteBench", targets: ["SQLiteBench"]),
    ],
    dependencies: [
        .package(path: "../.."),
        // The wire format and codec every relay shares.
        .package(path: "../Wire"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "AsyncMailSQLite",
            dependencies: [
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailRelay", package: "wire"),
                .product(name: "RelayWire", package: "wire"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SQLitePeer",
            dependencies: ["AsyncMailSQLite", .product(name: "AsyncMail", package: root)]
        ),
        .executableTarget(
            name: "SQLiteBench",
            dependencies: [
                "AsyncMailSQLite",
                .product(name: "AsyncMail", package: root),
                .product(name: "Logging", package: "swift-log"),
                // The poller it measures the relay against uses SQLite directly, as a user would.
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                // The relay's publish durations and receive lags, read as its metrics (KeptTimer.swift).
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // The relay's JSON codec, against Foundation's (`SQLiteBench codec`).
                .product(name: "RelayWire", package: "wire"),
            ]
        ),
        .testTarget(
            name: "AsyncMailSQLiteTests",
            dependencies: [
                "AsyncMailSQLite",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
                // The Setting Up article's ServiceGroup, run as written.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
