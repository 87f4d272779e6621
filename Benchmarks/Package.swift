// swift-tools-version: 6.2
// A nested package, so the library never depends on benchmark code. Run:
//   Benchmarks/run      (builds both packages in release and prints the whole table)
import PackageDescription

let package = Package(
    name: "BioAuthBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "BioAuth", path: ".."),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.25.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.1.0"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "bioauth-bench",
            dependencies: [
                .product(name: "BioAuthCore", package: "BioAuth"),
                .product(name: "BioAuthServer", package: "BioAuth"),
                .product(name: "BioAuthSQLite", package: "BioAuth"),
                .product(name: "BioAuthPostgres", package: "BioAuth"),
                .product(name: "BioAuthAttestation", package: "BioAuth"),
                .product(name: "BioAuthEmulator", package: "BioAuth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "Verification",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "BioAuthCore", package: "BioAuth"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/Verification",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "bioauth-load",
            dependencies: [
                .product(name: "BioAuthCore", package: "BioAuth"),
                .product(name: "BioAuthSQLite", package: "BioAuth"),
                .product(name: "BioAuthPostgres", package: "BioAuth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "bioauth-floor",
            dependencies: [
                .product(name: "BioAuthCore", package: "BioAuth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
