import Crypto
import Foundation
import X509

/// The `apple` attestation format (WebAuthn §8.8, Apple anonymous attestation): a certificate
/// Apple issues per credential, whose nonce extension binds the registration and whose key is the
/// credential's, chaining to the Apple WebAuthn Root CA.
enum AppleAnonymousAttestation {
    static func verify(
        _ statement: CBOR, authenticatorData: Data, clientDataHash: Data, credential: WebAuthnAuthenticatorData.AttestedCredential,
        roots: [Certificate], at time: Date
    ) async throws(WebAuthnError) -> [Certificate] {
        let chain = try WebAuthnCertificates.chain(statement)
        let leaf = try await WebAuthnCertificates.anchored(chain, roots: roots, at: time)
        // Steps 2–4: the nonce is SHA-256(authenticatorData ‖ clientDataHash), in the same
        // extension App Attest uses.
        let nonce: Data
        do throws(AttestationError) { nonce = try AppAttestVerifier.nonce(in: leaf) } catch {
            throw WebAuthnError(.attestation, error.reason)
        }
        guard nonce == Data(SHA256.hash(data: authenticatorData + clientDataHash)) else {
            throw WebAuthnError(.attestation, "the certificate's nonce is not SHA-256(authenticatorData ‖ clientDataHash)")
        }
        // Step 5: the certificate is the credential's.
        guard leaf.publicKey == credential.publicKey.certificatePublicKey else {
            throw WebAuthnError(.attestation, "the attestation certificate's key is not the credential's")
        }
        return chain
    }
}

/// The `android-key` attestation format (WebAuthn §8.4): an Android Key Attestation chain whose
/// leaf is the credential's key, made for this registration, generated in the secure hardware
/// for signing, and signing the registration.
enum AndroidKeyWebAuthnAttestation {
    static func verify(
        _ statement: CBOR, authenticatorData: Data, clientDataHash: Data, credential: WebAuthnAuthenticatorData.AttestedCredential,
        roots: [Certificate], at time: Date
    ) throws(WebAuthnError) -> [Certificate] {
        guard let signature = statement["sig"]?.bytesValue, let algorithm = statement["alg"]?.intValue else {
            throw WebAuthnError(.malformed, "an android-key statement lacks alg or sig")
        }
        let chain = try WebAuthnCertificates.chain(statement)
        let description: KeyDescription
        do {
            _ = try CertificateChain.verifyKeyAttestationPath(chain, roots: roots, at: time)
            guard let value = chain[0].extensions[oid: KeyDescription.oid]?.value else {
                throw AttestationError(.malformed, "the leaf carries no key description")
            }
            description = try KeyDescription(derEncoded: value)
        } catch let error as AttestationError {
            throw WebAuthnError(error.check == .certificateChain ? .certificateChain : .attestation, error.reason)
        } catch {
            throw WebAuthnError(.attestation, "the leaf's key description is not DER")
        }
        let leaf = chain[0]
        // Step 2: sig by the leaf's key over authenticatorData ‖ clientDataHash, with alg.
        guard let key = COSEKey(leaf.publicKey, algorithm: algorithm) else {
            throw WebAuthnError(.algorithm, "the attestation certificate's key is not one for alg \(algorithm)")
        }
        guard key.isValidSignature(signature, for: authenticatorData + clientDataHash) else {
            throw WebAuthnError(.attestation, "the attestation signature does not verify with the certificate's key")
        }
        // Step 3: the certificate is the credential's.
        guard leaf.publicKey == credential.publicKey.certificatePublicKey else {
            throw WebAuthnError(.attestation, "the attestation certificate's key is not the credential's")
        }
        // Step 4: made for this registration, for this relying party only, and (what the secure
        // hardware enforces, not Android's software) generated there, for signing.
        guard description.attestationChallenge == clientDataHash else {
            throw WebAuthnError(.attestation, "the key's attestation challenge is not the client data's hash")
        }
        guard !description.softwareEnforced.allApplications, !description.hardwareEnforced.allApplications else {
            throw WebAuthnError(.attestation, "the key may be used by every application on the device")
        }
        let enforced = description.hardwareEnforced
        guard enforced.origin == KeyMint.originGenerated, enforced.purposes.contains(KeyMint.purposeSign) else {
            throw WebAuthnError(.attestation, "the secure hardware did not generate the key for signing")
        }
        return chain
    }
}

/// The `x5c` certificates of a statement, and their chain to a format's roots.
enum WebAuthnCertificates {
    static func chain(_ statement: CBOR) throws(WebAuthnError) -> [Certificate] {
        guard case .map = statement, let items = statement["x5c"]?.arrayValue else {
            throw WebAuthnError(.malformed, "the attestation statement lacks x5c")
        }
        let ders = items.compactMap(\.bytesValue)
        guard ders.count == items.count else { throw WebAuthnError(.malformed, "x5c holds something other than certificates") }
        do { return try CertificateChain.parse(ders) } catch { throw WebAuthnError(.malformed, error.reason) }
    }

    /// The leaf, once the chain (RFC 5280) leads to one of `roots` at `time`.
    static func anchored(_ chain: [Certificate], roots: [Certificate], at time: Date) async throws(WebAuthnError) -> Certificate {
        do { return try await CertificateChain.verify(chain, roots: roots, at: time) } catch {
            throw WebAuthnError(error.check == .certificateChain ? .certificateChain : .attestation, error.reason)
        }
    }
}
