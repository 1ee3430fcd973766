// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Starter",
    platforms: [.macOS(.v15)],
    dependencies: [
        // A checkout of AsyncMail beside this package: the core, and each relay's package in it.
        .package(path: "../AsyncMail"),
        .package(path: "../AsyncMail/Relays/SQLite"),
        .package(path: "../AsyncMail/Relays/Postgres"),
    ],
    targets: [
        .executableTarget(
            name: "Starter",
            dependencies: [
                .product(name: "AsyncMail", package: "AsyncMail"),
                // One host, no server: processes sharing a SQLite file.
                .product(name: "AsyncMailSQLite", package: "SQLite"),
                // A fleet of machines: a PostgreSQL database.
                .product(name: "AsyncMailPostgres", package: "Postgres"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
