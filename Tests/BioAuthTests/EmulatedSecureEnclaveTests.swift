import BioAuth
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Crypto
import Foundation
import Testing

/// Secure Enclave keys (SecAccessControl.h, SecKey.h, Security `SecKeyAdaptors.m`).
struct EmulatedSecureEnclaveTests {
    let device = EmulatedDevice.faceID()
    var enclave: EmulatedSecureEnclave { EmulatedSecureEnclave(device: device) }

    func makeKey(_ flags: AccessControlFlags, tag: String = "k") throws -> Data {
        try enclave.createKey(EnclaveKeyParameters(tag: tag, accessControl: acl(flags)))
    }

    /// Only 256-bit EC keys (SecItem.h, kSecAttrTokenIDSecureEnclave).
    @Test func onlyP256KeysCanBeCreated() {
        let rsa = EnclaveKeyParameters(tag: "r", keyType: .rsa, sizeInBits: 2048, accessControl: acl(.privateKeyUsage))
        #expect(enclaveFailure { _ = try enclave.createKey(rsa) } == .status(.errSecParam))
        let p384 = EnclaveKeyParameters(tag: "p", sizeInBits: 384, accessControl: acl(.privateKeyUsage))
        #expect(enclaveFailure { _ = try enclave.createKey(p384) } == .status(.errSecParam))
    }

    /// No enclave → -25293 (EllipticCurveKeyPair #19, #25).
    @Test func noSecureEnclaveFailsWithAuthFailed() {
        let device = EmulatedDevice(configuration: .init(hasSecureEnclave: false))
        let enclave = EmulatedSecureEnclave(device: device)
        #expect(!enclave.isAvailable)
        #expect(
            enclaveFailure { _ = try enclave.createKey(EnclaveKeyParameters(tag: "k", accessControl: acl(.privateKeyUsage))) }
                == .status(.errSecAuthFailed))
    }

    /// The public key is X9.63 `04‖X‖Y`, 65 bytes (SecKey.h); the DER signature verifies with swift-crypto.
    @Test func publicKeyIsX963AndSignaturesVerify() throws {
        let publicKey = try makeKey([.privateKeyUsage, .biometryCurrentSet])
        #expect(publicKey.count == 65 && publicKey.first == 0x04)
        let message = Data("sign me".utf8)
        let signature = try enclave.sign(tag: "k", message: message, context: nil)
        #expect(device.promptCount == 1)
        let verifier = try P256.Signing.PublicKey(x963Representation: publicKey)
        #expect(verifier.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
        #expect(signature.count <= 72)
    }

    /// Without `.privateKeyUsage` the constraint does not cover key operations: the key cannot sign
    /// ("ACL operation is not allowed: 'ock'", flutter_secure_storage PR #989; SecAccessControl.m).
    @Test func signingNeedsPrivateKeyUsageUnderAConstraint() throws {
        _ = try makeKey([.biometryCurrentSet])
        #expect(
            enclaveFailure { _ = try enclave.sign(tag: "k", message: Data(), context: nil) } == .authentication(.aclOperationNotAllowed))
        #expect(
            enclaveFailure { _ = try enclave.decrypt(tag: "k", ciphertext: Data(count: 81), context: nil) }
                == .authentication(.aclOperationNotAllowed))
        // No constraint + privateKeyUsage: usable without the user (EllipticCurveKeyPair #15).
        device.unscriptedAction = .cancel
        _ = try makeKey([.privateKeyUsage], tag: "free")
        _ = try enclave.sign(tag: "free", message: Data(), context: nil)
        #expect(device.promptCount == 0)
    }

    /// Key operations surface the LAError itself (the emulator's default: SecCTKKey.m passes the
    /// token's error through; SecKey.h says only that a CFError is returned).
    @Test func cancelledSignatureSurfacesTheLAError() throws {
        _ = try makeKey([.privateKeyUsage, .biometryAny])
        device.script(.cancel)
        #expect(enclaveFailure { _ = try enclave.sign(tag: "k", message: Data(), context: nil) } == .authentication(.userCancel))
    }

    /// No private-key export (SecKey.h: enclave keys are not exportable).
    @Test func privateKeyCannotBeExported() throws {
        _ = try makeKey([.privateKeyUsage])
        #expect(enclaveFailure { _ = try enclave.copyPrivateKeyRepresentation(tag: "k") } != nil)
    }

    /// `.biometryCurrentSet` keys die with an enrollment change (SecAccessControl.h). Whether the
    /// lookup still finds them is UNCONFIRMED: `SecItem.m` removes `kSecAttrAccessControl` from
    /// token items, so by default the key is found and only its use fails.
    @Test func currentSetKeyDiesOnEnrollmentChange() throws {
        _ = try makeKey([.privateKeyUsage, .biometryCurrentSet], tag: "current")
        _ = try makeKey([.privateKeyUsage, .biometryAny], tag: "any")
        device.enrollBiometry()
        #expect(enclaveFailure { _ = try enclave.publicKey(tag: "current") } == nil, "found by default: only its use fails")
        #expect(enclaveFailure { _ = try enclave.sign(tag: "current", message: Data(), context: nil) } == .status(.errSecItemNotFound))
        _ = try enclave.sign(tag: "any", message: Data(), context: nil)
    }

    @Test func aDeadKeyIsNotFoundWhenTheLookupIsConfiguredToFail() throws {
        let device = EmulatedDevice.faceID { $0.invalidatedKeyLookup = .fails }
        let enclave = EmulatedSecureEnclave(device: device)
        _ = try enclave.createKey(EnclaveKeyParameters(tag: "current", accessControl: acl([.privateKeyUsage, .biometryCurrentSet])))
        device.enrollBiometry()
        #expect(enclaveFailure { _ = try enclave.publicKey(tag: "current") } == .status(.errSecItemNotFound))
        #expect(enclaveFailure { _ = try enclave.sign(tag: "current", message: Data(), context: nil) } == .status(.errSecItemNotFound))
    }

    /// SecItem.h deletes the passcode class's items when the passcode goes; its Secure Enclave keys
    /// were reported still found, unusable (the default, UNCONFIRMED), or are deleted.
    @Test(arguments: EmulatedDevice.PasscodeRemovalKeys.allCases)
    func removingThePasscodeKillsPasscodeClassKeys(_ removal: EmulatedDevice.PasscodeRemovalKeys) throws {
        var configuration = EmulatedDevice.Configuration(biometry: .faceID)
        configuration.passcodeRemovalKeys = removal
        let device = EmulatedDevice(configuration: configuration)
        let enclave = device.platform.enclave
        let access = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.privateKeyUsage])
        _ = try enclave.createKey(EnclaveKeyParameters(tag: "k", accessControl: access))
        device.removePasscode()
        switch removal {
        case .deleted: #expect(enclaveFailure { _ = try enclave.publicKey(tag: "k") } == .status(.errSecItemNotFound))
        case .foundButUnusable:
            #expect(enclaveFailure { _ = try enclave.publicKey(tag: "k") } == nil)
            #expect(enclaveFailure { _ = try enclave.sign(tag: "k", message: Data(), context: nil) } == .status(.errSecItemNotFound))
        }
    }

    /// What the emulator encrypts decrypts with an independent implementation of §3.12, and back.
    @Test func eciesMatchesAnIndependentImplementation() throws {
        let publicKey = try makeKey([.privateKeyUsage])
        let recipient = try P256.KeyAgreement.PublicKey(x963Representation: publicKey)
        let plaintext = Data("P256-SHA256-VIV round trip".utf8)
        let ciphertext = try IndependentECIES.encrypt(plaintext, to: recipient)
        #expect(ciphertext.count == plaintext.count + 81)
        #expect(try enclave.decrypt(tag: "k", ciphertext: ciphertext, context: nil) == SecretBytes(plaintext))

        let software = P256.KeyAgreement.PrivateKey()
        let ours = try ECIES.encrypt(plaintext, to: software.publicKey)
        #expect(try IndependentECIES.decrypt(ours, with: software) == plaintext)
    }

    @Test func tamperedCiphertextIsRejected() throws {
        let publicKey = try makeKey([.privateKeyUsage])
        var ciphertext = try ECIES.encrypt(Data("x".utf8), to: P256.KeyAgreement.PublicKey(x963Representation: publicKey))
        ciphertext[ciphertext.count - 1] ^= 1
        #expect(enclaveFailure { _ = try enclave.decrypt(tag: "k", ciphertext: ciphertext, context: nil) } == .status(.errSecParam))
        #expect(enclaveFailure { _ = try enclave.decrypt(tag: "k", ciphertext: Data(count: 80), context: nil) } == .status(.errSecParam))
    }

    /// The ciphertext Apple's Security.framework produced (from the ECIES Go package by Jedda Wignall, MIT; in `Tests/Vectors/apple/`)
    /// decrypts to its plaintext.
    @Test
    func appleProducedCiphertextDecrypts() throws {
        let vector = try JSONSerialization.jsonObject(with: TestVectors.load("apple/ecies-p256-sha256-variable-iv.json")) as! [String: Any]
        let key = try P256.KeyAgreement.PrivateKey(derRepresentation: Data(base64Encoded: vector["privateKeySEC1DERBase64"] as! String)!)
        let ciphertext = Data(base64Encoded: vector["ciphertextBase64"] as! String)!
        let expected = Data((vector["plaintext"] as! String).utf8)
        #expect(try ECIES.decrypt(ciphertext, with: key) == expected)
        #expect(try IndependentECIES.decrypt(ciphertext, with: key) == expected)
    }
}

/// A second implementation of Apple's ECIES (Security `SecKeyAdaptors.m` l.815–1060), written from the source's description, not from
/// `ECIES`:
/// the X9.63 KDF is computed by hand from SHA-256.
enum IndependentECIES {
    static func kdf(_ z: Data, _ sharedInfo: Data, length: Int) -> Data {
        var output = Data()
        var counter: UInt32 = 1
        while output.count < length {
            var block = z
            block.append(contentsOf: [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)])
            block.append(sharedInfo)
            output.append(contentsOf: SHA256.hash(data: block))
            counter += 1
        }
        return output.prefix(length)
    }

    static func keys(_ secret: SharedSecret, _ ephemeral: Data) -> (SymmetricKey, AES.GCM.Nonce) {
        let z = secret.withUnsafeBytes { Data($0) }
        let material = kdf(z, ephemeral, length: 32)
        return (SymmetricKey(data: material.prefix(16)), try! AES.GCM.Nonce(data: material.suffix(16)))
    }

    static func encrypt(_ plaintext: Data, to recipient: P256.KeyAgreement.PublicKey) throws -> Data {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let e = ephemeral.publicKey.x963Representation
        let (key, iv) = keys(try ephemeral.sharedSecretFromKeyAgreement(with: recipient), e)
        let box = try AES.GCM.seal(plaintext, using: key, nonce: iv)
        return e + box.ciphertext + box.tag
    }

    static func decrypt(_ ciphertext: Data, with key: P256.KeyAgreement.PrivateKey) throws -> Data {
        let e = ciphertext.prefix(65)
        let (symmetric, iv) = keys(try key.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: e)), Data(e))
        let body = ciphertext.dropFirst(65)
        return try AES.GCM.open(AES.GCM.SealedBox(nonce: iv, ciphertext: body.dropLast(16), tag: body.suffix(16)), using: symmetric)
    }
}

extension EmulatedSecureEnclaveTests {
    /// `WhenPasscodeSetThisDeviceOnly`: "can only be accessed when the device is unlocked"
    /// (`SecItem.h`): a locked phone refuses the key's use (errSecInteractionNotAllowed), not its lookup.
    @Test func aLockedDeviceRefusesTheKeysUseNotItsLookup() throws {
        _ = try makeKey([.privateKeyUsage, .biometryCurrentSet])
        device.lockScreen()
        #expect(enclaveFailure { _ = try enclave.publicKey(tag: "k") } == nil)
        #expect(enclaveFailure { _ = try enclave.sign(tag: "k", message: Data(), context: nil) } == .status(.errSecInteractionNotAllowed))
        device.unlockScreen()
        _ = try enclave.sign(tag: "k", message: Data(), context: nil)
    }
}
