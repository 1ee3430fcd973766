// swift-tools-version: 6.2
// AsyncMailRelayWire: the relays' one wire format and codec, and the accounting of what they
// receive, free of any database, so that every engine (AsyncMailPostgres, AsyncMailSQLite) shares
// it and the fuzzer builds it alone (Scripts/fuzz-relay.sh). Its API is SPI (`AsyncMailRelay`):
// for AsyncMail's relays, not for applications.
//   swift test --package-path Relays/Wire
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailRelayWire",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "RelayWire", targets: ["RelayWire"])
    ],
    dependencies: [
        .package(path: "../..")
    ],
    targets: [
        .target(name: "RelayWire", dependencies: [.product(name: "AsyncMail", package: root)]),
        // libFuzzer's target for decoding and accounting; without -DFUZZING it replays inputs.
        .executableTarget(
            name: "RelayFuzz",
            dependencies: ["RelayWire", "RelayFuzzDriver", .product(name: "AsyncMail", package: root)]
        ),
        .target(name: "RelayFuzzDriver"),
    ],
    swiftLanguageModes: [.v6]
)
