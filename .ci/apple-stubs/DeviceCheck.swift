// DeviceCheck's App Attest service as far as `BioAuthApple` uses it, written from
// https://developer.apple.com/documentation/devicecheck/dcappattestservice (iOS 14, macOS 11,
// tvOS 15, watchOS 9, visionOS 1).
@_exported import AppleStubBase

/// https://developer.apple.com/documentation/devicecheck/dcappattestservice — its methods' async forms.
@available(iOS 14.0, macOS 11.0, visionOS 1.0, watchOS 9.0, tvOS 15.0, *)
open class DCAppAttestService: NSObject, @unchecked Sendable {
    /// https://developer.apple.com/documentation/devicecheck/dcappattestservice/shared
    public static let shared = DCAppAttestService()
    /// https://developer.apple.com/documentation/devicecheck/dcappattestservice/issupported
    open var isSupported: Bool { false }
    /// https://developer.apple.com/documentation/devicecheck/dcappattestservice/generatekey(completionhandler:)
    open func generateKey() async throws -> String { "" }
    /// https://developer.apple.com/documentation/devicecheck/dcappattestservice/attestkey(_:clientdatahash:completionhandler:)
    open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { Data() }
    /// https://developer.apple.com/documentation/devicecheck/dcappattestservice/generateassertion(_:clientdatahash:completionhandler:)
    open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { Data() }
}

/// https://developer.apple.com/documentation/devicecheck/dcerror
@available(iOS 11.0, macOS 10.15, visionOS 1.0, watchOS 9.0, tvOS 11.0, *)
public struct DCError: Error, Sendable {
    /// https://developer.apple.com/documentation/devicecheck/dcerror/code
    public enum Code: Int, Sendable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        @available(iOS 14.0, macOS 11.0, visionOS 1.0, watchOS 9.0, tvOS 15.0, *)
        case invalidInput = 2
        @available(iOS 14.0, macOS 11.0, visionOS 1.0, watchOS 9.0, tvOS 15.0, *)
        case invalidKey = 3
        @available(iOS 14.0, macOS 11.0, visionOS 1.0, watchOS 9.0, tvOS 15.0, *)
        case serverUnavailable = 4
    }
    public let code: Code
}
