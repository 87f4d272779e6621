#if canImport(DeviceCheck) && os(iOS)
    import BioAuth
    import DeviceCheck
    import Foundation

    /// `AppAttestService` over `DCAppAttestService.shared` (DeviceCheck, iOS 14+). Forwarding only:
    /// Apple's base64 key id becomes its 32 bytes, `DCError.Code` becomes ``AppAttestFailure``.
    package struct SystemAppAttest: AppAttestService {
        package init() {}

        // DCAppAttestService.h: `@property (getter=isSupported, readonly) BOOL supported;`
        package var isSupported: Bool { DCAppAttestService.shared.isSupported }

        package func generateKey() async throws(AppAttestFailure) -> Data {
            let keyID: String
            do { keyID = try await DCAppAttestService.shared.generateKey() } catch { throw Self.failure(error) }
            guard let bytes = Data(base64Encoded: keyID) else { throw .unknownSystemFailure }
            return bytes
        }

        package func attestKey(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data {
            do { return try await DCAppAttestService.shared.attestKey(keyID.base64EncodedString(), clientDataHash: clientDataHash) } catch {
                throw Self.failure(error)
            }
        }

        package func generateAssertion(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data {
            do {
                return try await DCAppAttestService.shared.generateAssertion(keyID.base64EncodedString(), clientDataHash: clientDataHash)
            } catch {
                throw Self.failure(error)
            }
        }

        // DCError.h: DCErrorUnknownSystemFailure 0, FeatureUnsupported 1, InvalidInput 2, InvalidKey 3, ServerUnavailable 4.
        static func failure(_ error: any Error) -> AppAttestFailure {
            switch (error as? DCError)?.code {
            case .featureUnsupported?: .featureUnsupported
            case .invalidInput?: .invalidInput
            case .invalidKey?: .invalidKey
            case .serverUnavailable?: .serverUnavailable
            default: .unknownSystemFailure
            }
        }
    }
#endif
