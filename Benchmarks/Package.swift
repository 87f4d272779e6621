// swift-tools-version: 6.2
// A nested package, so the library never depends on benchmark code. Run:
//   swift run -c release --package-path Benchmarks bioauth-bench
import PackageDescription

let package = Package(
    name: "BioAuthBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "BioAuth", path: ".."),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "bioauth-bench",
            dependencies: [
                .product(name: "BioAuthCore", package: "BioAuth"),
                .product(name: "BioAuthServer", package: "BioAuth"),
                .product(name: "BioAuthSQLite", package: "BioAuth"),
                .product(name: "BioAuthHTTP", package: "BioAuth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
