// swift-tools-version: 6.1
// AsyncMail's benchmarks, kept out of the root package so the library stays dependency-free.
// Run them all, with ratios against baselines from the same run: `Benchmarks/run.sh`.
import PackageDescription

// A path dependency is named after its directory, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "AsyncMail").lowercased()

let package = Package(
    name: "AsyncMailBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // Explicit, so that Tests/ReleaseShapes can build them too (Scripts/build-packages.sh).
        .executable(name: "MailroomBenchmarks", targets: ["MailroomBenchmarks"]),
        .executable(name: "Probe", targets: ["Probe"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(path: "../Observability"),
        .package(
            url: "https://github.com/ordo-one/package-benchmark",
            exact: "1.38.1",
            traits: ["MallocInterposer"]
        ),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
    ],
    targets: [
        .executableTarget(
            name: "MailroomBenchmarks",
            dependencies: [
                "Shapes",
                .product(name: "AsyncMail", package: root),
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            path: "Benchmarks/MailroomBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // The timed shapes and their fixtures, written once for both executables.
        .target(name: "Shapes", dependencies: [.product(name: "AsyncMail", package: root)]),
        // Idle memory per subscription, latency percentiles, and the interleaved ratio samples.
        .executableTarget(
            name: "Probe",
            dependencies: [
                "Shapes", .product(name: "AsyncMail", package: root), "CHeapStats",
                .product(name: "AsyncMailObservability", package: "observability"),
            ]
        ),
        .target(name: "CHeapStats"),
    ],
    swiftLanguageModes: [.v6]
)
