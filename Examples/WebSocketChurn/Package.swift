// swift-tools-version:6.1
// A WebSocket server that uses HummingbirdWebSocket alone, and nothing of AsyncMail: the minimal
// program behind the chat example's memory per served connection (see README.md).
import PackageDescription

let package = Package(
    name: "WebSocketChurn",
    platforms: [.macOS(.v15)],
    products: [
        // Explicit, so that Tests/ReleaseShapes can build it too (Scripts/build-packages.sh).
        .executable(name: "WebSocketChurn", targets: ["WebSocketChurn"])
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", exact: "2.8.1"),
    ],
    targets: [
        .executableTarget(
            name: "WebSocketChurn",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
