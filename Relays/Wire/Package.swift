// swift-tools-version: 6.2
// AsyncMailRelayWire: what every relay engine (AsyncMailPostgres, AsyncMailSQLite) shares, free of
// any database.
// - AsyncMailRelay: the public types a relay's user sees whatever the engine (events, errors,
//   counters, the key, presence entries), re-exported by each engine; and, as SPI, the engines'
//   common half: event reporting, metrics, tracing, forwarding and delivery.
// - RelayWire: the one wire format and codec, and the accounting of what a relay receives, which
//   the fuzzer builds alone (Scripts/fuzz-relay.sh). SPI only (`AsyncMailRelay`).
//   swift test --package-path Relays/Wire
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailRelayWire",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AsyncMailRelay", targets: ["AsyncMailRelay"]),
        .library(name: "RelayWire", targets: ["RelayWire"]),
        // What the relays' test suites share: relays stopped when their test ends, a child's lines.
        .library(name: "RelayTesting", targets: ["RelayTesting"]),
        // The fuzz target (Scripts/fuzz-relay.sh); explicit, so that Tests/ReleaseShapes can build it too.
        .executable(name: "RelayFuzz", targets: ["RelayFuzz"]),
    ],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "AsyncMailRelay",
            dependencies: [
                "RelayWire",
                .product(name: "AsyncMail", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(name: "RelayWire", dependencies: [.product(name: "AsyncMail", package: root)]),
        .target(
            name: "RelayTesting",
            dependencies: [
                "AsyncMailRelay",
                .product(name: "AsyncMail", package: root),
                .product(name: "AsyncMailTesting", package: root),
            ]
        ),
        // libFuzzer's target for decoding and accounting; without -DFUZZING it replays inputs.
        .executableTarget(
            name: "RelayFuzz",
            dependencies: ["RelayWire", "RelayFuzzDriver", .product(name: "AsyncMail", package: root)]
        ),
        .target(name: "RelayFuzzDriver"),
    ],
    swiftLanguageModes: [.v6]
)
