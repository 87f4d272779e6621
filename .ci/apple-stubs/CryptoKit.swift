// CryptoKit's Secure Enclave namespace as far as `BioAuthApple` uses it, written from
// https://developer.apple.com/documentation/cryptokit/secureenclave (iOS 13, macOS 10.15, tvOS 13,
// watchOS 6, visionOS 1).
@_exported import AppleStubBase

/// https://developer.apple.com/documentation/cryptokit/secureenclave
@available(iOS 13.0, macOS 10.15, visionOS 1.0, watchOS 6.0, tvOS 13.0, *)
public enum SecureEnclave {
    /// https://developer.apple.com/documentation/cryptokit/secureenclave/isavailable
    public static var isAvailable: Bool { false }
}
