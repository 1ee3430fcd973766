// swift-tools-version: 6.2
// The relays' contract: one suite of tests that every engine (AsyncMailPostgres, AsyncMailSQLite)
// passes, each test run once per engine, so that a third engine is a small step: an `Engine` value
// in Tests/RelayContractTests/Engines.swift, and the suite says what it still lacks.
//   swift test --package-path Relays/Contract   (PostgreSQL as for Relays/Postgres; SQLite needs nothing)
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailRelayContract",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // One process of the contract's two-process tests, for either engine.
        .executable(name: "ContractPeer", targets: ["ContractPeer"])
    ],
    dependencies: [
        .package(path: "../.."),
        .package(path: "../Wire"),
        .package(path: "../Postgres"),
        .package(path: "../SQLite"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The mail both the tests and the peer post.
        .target(name: "ContractMail", dependencies: [.product(name: "AsyncMail", package: root)]),
        .executableTarget(
            name: "ContractPeer",
            dependencies: [
                "ContractMail",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailPostgres", package: "postgres"),
                .product(name: "AsyncMailSQLite", package: "sqlite"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "RelayContractTests",
            dependencies: [
                "ContractMail",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
                .product(name: "AsyncMailRelay", package: "wire"),
                .product(name: "AsyncMailPostgres", package: "postgres"),
                .product(name: "RelayTesting", package: "wire"),
                .product(name: "AsyncMailSQLite", package: "sqlite"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
