// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "BioAuth",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "BioAuthCore", targets: ["BioAuthCore"]),
        .library(name: "BioAuth", targets: ["BioAuth"]),
        .library(name: "BioAuthClient", targets: ["BioAuthClient"]),
        .library(name: "BioAuthApple", targets: ["BioAuthApple"]),
        .library(name: "BioAuthEmulator", targets: ["BioAuthEmulator"]),
        .library(name: "BioAuthAttestation", targets: ["BioAuthAttestation"]),
        .library(name: "BioAuthServer", targets: ["BioAuthServer"]),
        .library(name: "BioAuthSQLite", targets: ["BioAuthSQLite"]),
        .library(name: "BioAuthPostgres", targets: ["BioAuthPostgres"]),
        .library(name: "BioAuthHTTP", targets: ["BioAuthHTTP"]),
        .library(name: "BioAuthWebhooks", targets: ["BioAuthWebhooks"]),
        .library(name: "BioAuthTesting", targets: ["BioAuthTesting"]),
        .library(name: "BioAuthServerTesting", targets: ["BioAuthServerTesting"]),
        // A real server inside an app's test process: link it from the app's test target only.
        .library(name: "BioAuthTestServer", targets: ["BioAuthTestServer"]),
        .executable(name: "bioauth-server", targets: ["BioAuthServerApp"]),
        .executable(name: "bioauth", targets: ["bioauth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        // Pinned to a minor release: BioAuthSQLite imports `VaporCSQLite`, the SQLite amalgamation
        // SQLiteNIO vendors but does not ship as a product, so a new minor release may move it.
        .package(url: "https://github.com/vapor/sqlite-nio.git", .upToNextMinor(from: "1.13.0")),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.25.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.15.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        // `swift package generate-documentation` (.ci/docs): a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "BioAuthCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                // PBKDF2 only where CommonCrypto is absent: an Apple app links no BoringSSL.
                .product(
                    name: "CryptoExtras", package: "swift-crypto",
                    condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi])),
            ]
        ),
        .target(
            name: "BioAuth",
            dependencies: [
                "BioAuthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The App Store's privacy manifest: the required-reason APIs this library calls
            // (ProcessInfo.systemUptime, 35F9.1), no tracking, no data collected (PrivacyManifestTests).
            resources: [.copy("PrivacyInfo.xcprivacy")]
        ),
        .target(name: "BioAuthClient", dependencies: ["BioAuth", "BioAuthCore", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "BioAuthApple", dependencies: ["BioAuth", "BioAuthCore"]),
        .target(
            name: "BioAuthEmulator",
            dependencies: [
                "BioAuth", "BioAuthCore", "BioAuthAttestation", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            // App Attest and Android Key Attestation, verified; swift-certificates is already here through jwt-kit.
            name: "BioAuthAttestation",
            dependencies: [
                "BioAuthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "BioAuthServer",
            dependencies: [
                "BioAuthCore",
                "BioAuthAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .target(
            // The SQL both stores run, written once over a dialect: schema, row decoders, statements.
            name: "BioAuthSQL",
            dependencies: ["BioAuthServer", "BioAuthCore"]
        ),
        .target(
            name: "BioAuthSQLite",
            dependencies: [
                "BioAuthServer", "BioAuthSQL", "BioAuthCore", "CBioAuthSQLite", .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ]
        ),
        .target(
            // One C function: sqlite3_db_config is variadic, which Swift cannot call.
            name: "CBioAuthSQLite",
            dependencies: [.product(name: "SQLiteNIO", package: "sqlite-nio")]
        ),
        .target(
            name: "BioAuthPostgres",
            dependencies: [
                "BioAuthServer", "BioAuthSQL", "BioAuthCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // `PostgresClient.withConnection` throws the pool's own errors unmapped
                // (`ConnectionPoolError`: shut down, cancelled, no connection can be made).
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "BioAuthHTTP",
            dependencies: [
                "BioAuthServer", "BioAuthCore", "BioAuthAttestation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("openapi.yaml")]
        ),
        .target(
            // Outgoing HTTP (AsyncHTTPClient, and with it a second TLS stack): only the server
            // executable and embedders that post webhooks link it, never BioAuthTestServer.
            name: "BioAuthWebhooks",
            dependencies: [
                "BioAuthServer", "BioAuthCore", "BioAuthAttestation",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(name: "BioAuthTesting", dependencies: ["BioAuth", "BioAuthCore", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "BioAuthServerTesting",
            dependencies: [
                "BioAuthTesting", "BioAuthServer", "BioAuthCore", "BioAuthAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "BioAuthServerApp",
            dependencies: [
                "BioAuthHTTP", "BioAuthWebhooks", "BioAuthServer", "BioAuthSQLite", "BioAuthPostgres", "BioAuthAttestation",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .target(
            name: "BioAuthTestServer",
            dependencies: [
                "BioAuthHTTP", "BioAuthServer", "BioAuthSQLite", "BioAuthCore", "BioAuthClient", "BioAuth",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "BioAuthCLI",
            dependencies: [
                "BioAuth", "BioAuthAttestation", "BioAuthClient", "BioAuthCore", "BioAuthEmulator", "BioAuthHTTP", "BioAuthServer",
                "BioAuthSQLite", "BioAuthTestServer",
                "BioAuthWebhooks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "bioauth", dependencies: ["BioAuthCLI", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(
            name: "BioAuthAttestationTests",
            dependencies: [
                "BioAuthAttestation", "BioAuthCore", "BioAuthTesting", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "BioAuthCoreTests", dependencies: ["BioAuthCore", "BioAuthTesting", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "BioAuthTests",
            dependencies: [
                "BioAuth", "BioAuthApple", "BioAuthAttestation", "BioAuthClient", "BioAuthEmulator", "BioAuthTesting", "BioAuthCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What runs on an iPhone, and only that: no server, no `Process`, no file read by a path on
        // the machine that built it — the vectors are in the test bundle (`Vectors` links to
        // Tests/Vectors). Xcode's `BioAuthDeviceTests` scheme (.swiftpm/xcode) runs it on a device.
        .testTarget(
            name: "BioAuthDeviceTests",
            dependencies: ["BioAuth", "BioAuthApple", "BioAuthCore", "BioAuthTesting"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "BioAuthServerTests",
            dependencies: [
                "BioAuthServer", "BioAuthSQL", "BioAuthSQLite", "BioAuthPostgres", "BioAuthHTTP", "BioAuthWebhooks", "BioAuthTesting",
                "BioAuthServerTesting", "BioAuthCore", "BioAuthEmulator", "BioAuth", "BioAuthClient", "BioAuthCLI",
                "BioAuthAttestation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "BioAuthClientTests",
            dependencies: [
                "BioAuthClient", "BioAuth", "BioAuthCore", "BioAuthEmulator", "BioAuthTesting", "BioAuthTestServer", "BioAuthServer",
                "BioAuthAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BioAuthCLITests",
            dependencies: [
                "BioAuthCLI", "BioAuthTesting", "BioAuthServerTesting", "BioAuthCore", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
