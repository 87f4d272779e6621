import BioAuthCore
import Crypto
import Foundation

/// A second Secure Enclave P-256 key that proves the device, not the user: `.privateKeyUsage`
/// only, so it signs without a prompt, and `AfterFirstUnlockThisDeviceOnly`, so a token refresh
/// in the background signs while the phone is locked (SecAccessControl.h: `privateKeyUsage`
/// "enable private key usage with signing operation"; SecItem.h: `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
/// It never leaves the enclave, so a token bound to it (DPoP, RFC 9449) is useless on any other
/// machine — and no API call ever prompts for it.
public struct DeviceProofKey: Sendable {
    public let platform: DevicePlatform
    public let tag: KeyTag

    public init(platform: DevicePlatform, tag: KeyTag) {
        self.platform = platform
        self.tag = tag
    }

    /// Deletes any key under the tag and creates a new one. No prompt.
    @discardableResult
    public func replaceKey() throws(BioAuthError) -> DevicePublicKey {
        guard platform.enclave.isAvailable else { throw BioAuthError(.secureEnclaveUnavailable) }
        let access: AccessControl
        do { access = try AccessControl(accessibility: .afterFirstUnlockThisDeviceOnly, flags: [.privateKeyUsage]) } catch {
            throw BioAuthError(status: error)
        }
        deleteKey()
        do {
            return try DevicePublicKey(
                x963Representation: try platform.enclave.createKey(EnclaveKeyParameters(tag: tag.rawValue, accessControl: access)))
        } catch let failure as EnclaveFailure { throw BioAuthError(enclave: failure) } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// The public key. No prompt.
    public func publicKey() throws(BioAuthError) -> DevicePublicKey {
        do {
            return try DevicePublicKey(x963Representation: try platform.enclave.publicKey(tag: tag.rawValue))
        } catch let failure as EnclaveFailure { throw BioAuthError(enclave: failure) } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// Whether a key is found under the tag.
    public var hasKey: Bool { (try? platform.enclave.publicKey(tag: tag.rawValue)) != nil }

    /// A DPoP proof for `method` and `url` (RFC 9449 §4), with `ath` for `accessToken` and the
    /// server's `nonce` when given. No prompt.
    public func proof(method: String, url: String, at now: Date, accessToken: String? = nil, nonce: String? = nil) throws(BioAuthError)
        -> String
    {
        let key = try publicKey()
        do {
            return try DPoPProof.make(key: key, method: method, url: url, at: now, accessToken: accessToken, nonce: nonce) { input in
                let der = try platform.enclave.sign(tag: tag.rawValue, message: input, context: nil)
                return try P256.Signing.ECDSASignature(derRepresentation: der).rawRepresentation
            }
        } catch let error as BioAuthError { throw error } catch let failure as EnclaveFailure { throw BioAuthError(enclave: failure) } catch
        {
            throw BioAuthError(.cryptographyFailure)
        }
    }

    /// Deletes the key if present. No prompt.
    public func deleteKey() {
        try? platform.enclave.deleteKey(tag: tag.rawValue)
    }
}
