// swift-tools-version: 6.2
import Foundation
import PackageDescription

/// The BioAuth checkout this package sits in: a path dependency's identity is its directory's name.
let bioauth = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// A small backend with its own login that embeds BioAuth: it mounts BioAuth's routes under
// /auth, hands enrolment grants to its app, receives BioAuth's signed webhooks and protects one
// of its own routes with BioAuth's access token. Built and tested by .ci/run.
let package = Package(
    name: "BioAuthExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
    ],
    targets: [
        .target(
            name: "ShopBackend",
            dependencies: [
                .product(name: "BioAuthHTTP", package: bioauth),
                .product(name: "BioAuthServer", package: bioauth),
                .product(name: "BioAuthCore", package: bioauth),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ShopBackendTests",
            dependencies: [
                "ShopBackend",
                .product(name: "BioAuthCore", package: bioauth),
                .product(name: "BioAuthServer", package: bioauth),
                .product(name: "BioAuthSQLite", package: bioauth),
                .product(name: "BioAuthWebhooks", package: bioauth),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
