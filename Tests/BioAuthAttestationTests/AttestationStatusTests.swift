@testable import BioAuthAttestation
import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import Testing
import X509

/// Issue 45 item 2: the attestation status list, in Google's format, checked against every
/// certificate of a real chain (a Pixel 9a's), failing closed when it cannot tell.
struct AttestationStatusTests {
    /// A list in the published format, written here: one revoked and one suspended serial.
    static let listJSON = """
        {"entries": {
          "2c8cdddfd5e03bfc": {"status": "REVOKED", "expires": "2030-01-01", "reason": "KEY_COMPROMISE", "comment": "a leaked keybox"},
          "00C8966FCB2FBB0D7A": {"status": "SUSPENDED", "reason": "SOFTWARE_FLAW"}
        }}
        """

    @Test func theListIsReadInGooglesFormatWithSerialsAsItKeysThem() throws {
        let list = try AttestationStatusList(json: Data(Self.listJSON.utf8))
        #expect(list.entries.count == 2)
        #expect(list.entries["2c8cdddfd5e03bfc"] == .init(status: "REVOKED", reason: "KEY_COMPROMISE", expires: "2030-01-01"))
        // Keys are lower-case hex without leading zeros, whatever the file's case and padding.
        #expect(list.entries["c8966fcb2fbb0d7a"]?.status == "SUSPENDED")
        let serial = Certificate.SerialNumber(bytes: [0x00, 0xC8, 0x96, 0x6F, 0xCB, 0x2F, 0xBB, 0x0D, 0x7A])
        #expect(AttestationStatusList.key(serial) == "c8966fcb2fbb0d7a" && list.entry(for: serial)?.status == "SUSPENDED")
        #expect(AttestationStatusList.key(Certificate.SerialNumber(bytes: [0x00])) == "0")
        // What `bioauth attestation status update` writes reads back the same.
        #expect(try AttestationStatusList(json: list.json()) == list)
    }

    @Test func aFileThatIsNoStatusListIsRefusedByName() {
        let refused = [
            "", "[]", #"{"entries": []}"#, #"{"other": {}}"#, #"{"entries": {"xyz": {"status": "REVOKED"}}}"#,
            #"{"entries": {"2c8c": {"reason": "KEY_COMPROMISE"}}}"#, #"{"entries": {"2c8c": "REVOKED"}}"#,
        ]
        for text in refused {
            #expect(throws: AttestationStatusListError.self, "\(text)") { try AttestationStatusList(json: Data(text.utf8)) }
        }
        #expect(throws: Never.self) { try AttestationStatusList(json: Data(#"{"entries": {}, "added": 1}"#.utf8)) }
    }

    /// A list's words reach logs and answers only as upper-case names: free text never does.
    @Test func anEntryDescribesItselfWithTheListsNamesOnly() {
        #expect("\(AttestationStatusList.Entry(status: "REVOKED", reason: "KEY_COMPROMISE"))" == "REVOKED (KEY_COMPROMISE)")
        #expect("\(AttestationStatusList.Entry(status: "revoked <script>", reason: "see https://x"))" == "LISTED (UNSPECIFIED)")
    }

    /// The Pixel 9a TEE chain (2026 EC root) with a verifier that asks only what it has.
    static func pixel() async throws -> (
        ders: [Data], chain: [Certificate], key: DevicePublicKey, challenge: Data, requirements: AndroidKeyRequirements, time: Date
    ) {
        let item = try #require(try AttestationTamperTests.cases().first { $0.name.hasPrefix("tegu/sdk36/TEE_EC") })
        guard case .androidChain(let ders, _) = item.evidence, let time = item.time else { throw CocoaError(.fileReadCorruptFile) }
        let (chain, description) = try await AndroidKeyAttestationVerifier.decodeChain(
            ders, roots: TrustAnchors.googleHardwareAttestationRoots, at: time)
        let application = try #require(description.softwareEnforced.applicationID)
        var requirements = AndroidKeyRequirements(
            packageNames: [application.packages[0].name], signingCertificateDigests: Set(application.signatureDigests))
        requirements.biometricOnEveryUse = false
        let key = DevicePublicKey(try #require(P256.Signing.PublicKey(chain[0].publicKey)))
        return (ders, chain, key, description.attestationChallenge, requirements, time)
    }

    @Test func aListedCertificateAnywhereInTheChainRefusesItWithItsStatus() async throws {
        let pixel = try await Self.pixel()
        func verify(_ status: AttestationStatus, ders: [Data]? = nil) async -> AttestationError? {
            do {
                _ = try await AndroidKeyAttestationVerifier(requirements: pixel.requirements, revocation: .checked(status))
                    .verify(chain: ders ?? pixel.ders, challenge: pixel.challenge, publicKey: pixel.key, at: pixel.time)
                return nil
            } catch { return error }
        }
        func listing(_ entries: [String: AttestationStatusList.Entry], asOf: Date? = nil) -> AttestationStatus {
            AttestationStatus(loaded: .init(list: AttestationStatusList(entries: entries), asOf: asOf ?? pixel.time))
        }
        // Unlisted: verifies, with the list checked.
        #expect(await verify(listing(["2c8cdddfd5e03bfc": .init(status: "REVOKED")])) == nil)
        // Each certificate of the chain, listed, refuses it: the leaf, the batch or RKP intermediates.
        for certificate in pixel.chain {
            let serial = AttestationStatusList.key(certificate.serialNumber)
            let refused = await verify(listing([serial: .init(status: "REVOKED", reason: "KEY_COMPROMISE")]))
            #expect(refused?.check == .certificateStatus && refused?.reason.contains("REVOKED (KEY_COMPROMISE)") == true, "\(serial)")
            #expect(await verify(listing([serial: .init(status: "SUSPENDED")]))?.check == .certificateStatus)
            // A status this version does not know still refuses: the list holds no good certificates.
            #expect(await verify(listing([serial: .init(status: "QUARANTINED")]))?.check == .certificateStatus)
        }
        #expect(pixel.chain.count >= 3)
    }

    @Test func withoutACurrentListEveryChainIsRefusedButAForgeryStillAsAForgery() async throws {
        let pixel = try await Self.pixel()
        let verifier = { (status: AttestationStatus) in
            AndroidKeyAttestationVerifier(requirements: pixel.requirements, revocation: .checked(status))
        }
        func check(_ status: AttestationStatus, _ ders: [Data]) async -> AttestationError.Check? {
            do {
                _ = try await verifier(status).verify(chain: ders, challenge: pixel.challenge, publicKey: pixel.key, at: pixel.time)
                return nil
            } catch { return error.check }
        }
        let empty = AttestationStatusList(entries: [:])
        #expect(await check(AttestationStatus(), pixel.ders) == .statusUnknown, "no list loaded")
        let week = AttestationStatus.defaultMaximumAge
        #expect(
            await check(AttestationStatus(loaded: .init(list: empty, asOf: pixel.time - week - 1)), pixel.ders) == .statusUnknown,
            "older than 7 days")
        #expect(
            await check(AttestationStatus(loaded: .init(list: empty, asOf: pixel.time - week + 60)), pixel.ders) == nil,
            "just inside 7 days")
        #expect(
            await check(AttestationStatus(maximumAge: 3600, loaded: .init(list: empty, asOf: pixel.time - 3601)), pixel.ders)
                == .statusUnknown)
        // A chain that does not verify is refused for that, stale list or not.
        var broken = pixel.ders
        broken.removeLast()
        broken.removeLast()
        #expect(await check(AttestationStatus(), broken) == .certificateChain)
        #expect(AttestationStatus().note(at: pixel.time)?.contains("no attestation status list") == true)
        #expect(AttestationStatus(loaded: .init(list: empty, asOf: pixel.time)).note(at: pixel.time) == nil)
    }

    @Test func aFileSourceIsReadAsOfItsModificationAndAFailedReadKeepsTheListInForce() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(Self.listJSON.utf8).write(to: file)
        let written = Date(timeIntervalSince1970: 1_790_000_000)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: file.path)
        let status = AttestationStatus(source: try AttestationStatusSource(file.path))
        let loaded = try await status.refresh(now: Date())
        #expect(loaded.list.entries.count == 2 && abs(loaded.asOf.timeIntervalSince(written)) < 1)
        #expect(status.age(at: written + 3600) == 3600)
        // A file spoilt in place: the read fails, the list in force stays.
        try Data("{".utf8).write(to: file)
        await #expect(throws: AttestationStatusListError.self) { try await status.refresh(now: Date()) }
        #expect(status.loaded?.list.entries.count == 2)
        // An older list never replaces a newer one.
        status.update(.init(list: AttestationStatusList(entries: [:]), asOf: written - 60))
        #expect(status.loaded?.list.entries.count == 2)
        await #expect(throws: AttestationStatusListError.self) {
            try await AttestationStatus(source: .file("/nonexistent/status.json")).refresh(now: Date())
        }
    }

    @Test func aListIsFetchedOverHTTPSOnlyExceptFromLoopback() throws {
        #expect(try AttestationStatusSource("https://android.googleapis.com/attestation/status") == .google)
        #expect(try AttestationStatusSource("http://127.0.0.1:8080/status") == .url(URL(string: "http://127.0.0.1:8080/status")!))
        #expect(throws: AttestationStatusListError.self) { try AttestationStatusSource("http://mirror.example.com/status") }
        #expect(try AttestationStatusSource("/var/lib/bioauth/status.json") == .file("/var/lib/bioauth/status.json"))
    }
}
