// CryptoTokenKit's error codes, for the macOS tests that compare BioAuth's mirrored values with the
// SDK; written from https://developer.apple.com/documentation/cryptotokenkit/tkerror (iOS 9,
// macOS 10.10, tvOS 9, watchOS 2, visionOS 1).
@_exported import AppleStubBase

/// https://developer.apple.com/documentation/cryptotokenkit/tkerrordomain
@available(iOS 9.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let TKErrorDomain: String = "CryptoTokenKit"

/// https://developer.apple.com/documentation/cryptotokenkit/tkerror
@available(iOS 9.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public struct TKError: Error, Sendable {
    /// https://developer.apple.com/documentation/cryptotokenkit/tkerror/code
    public enum Code: Int, Sendable {
        case notImplemented = -1
        case communicationError = -2
        case corruptedData = -3
        case canceledByUser = -4
        case authenticationFailed = -5
        case objectNotFound = -6
        case tokenNotFound = -7
        case badParameter = -8
        case authenticationNeeded = -9
    }
    public let code: Code
}
