import BioAuthCore
import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// Typed ids and token hashes.
struct RecordIDTests {
    @Test func aTokenHashShowsNoBytesInItsDescriptionOrDump() {
        let hash = TokenHash(of: Data("a session token".utf8))
        var dumped = ""
        dump(hash, to: &dumped)
        let shown = ["\(hash)", String(reflecting: hash), dumped] + Mirror(reflecting: hash).children.map { "\($0.value)" }
        let bytes = hash.digest.map { String($0) }
        for text in shown {
            #expect(!text.contains(hash.digest.map { String(format: "%02x", $0) }.joined()), "\(text)")
            // dump() of a Data lists each byte as a decimal element; none may appear.
            #expect(!text.contains("- \(bytes[0])\n- \(bytes[1])") && !text.contains("bytes: 32 elements"), "\(text)")
        }
        #expect(TokenHash(of: Data("a session token".utf8)) == hash && TokenHash(ofText: "a session token") == hash)
    }

    /// A challenge id is the bearer of a pending proof: its text form is read from the wire
    /// (16 bytes, or `invalid_request` naming `challengeId`), and its description, debug
    /// description and `dump()` show no bytes.
    @Test func aChallengeIDIsReadStrictlyAndShowsNoBytes() throws {
        let bytes = Data((1...16).map { UInt8($0 * 11) })
        let id = try ChallengeID(Base64URL.encode(bytes))
        #expect(id.bytes == bytes && id == ChallengeID(bytes: bytes))
        var dumped = ""
        dump(id, to: &dumped)
        for text in ["\(id)", String(reflecting: id), dumped] + Mirror(reflecting: id).children.map({ "\($0.value)" }) {
            #expect(!text.contains(Base64URL.encode(bytes)) && !text.contains("- 11\n- 22"), "\(text)")
        }
        for wrong in ["", "AAAA", Base64URL.encode(bytes + [0]), "!" + Base64URL.encode(bytes).dropFirst()] {
            #expect(throws: ServerError.self) { try ChallengeID(wrong) }
            do { _ = try ChallengeID(wrong) } catch { #expect(error.code == .invalidRequest && error.field == "challengeId") }
        }
    }

    /// A user row's password hash and salt, and a challenge's id and nonce, stay out of its
    /// description, `dump()` and Mirror.
    @Test func userAndChallengeRecordsShowNoSecretBytes() {
        let secret = Data("0123456789abcdef0123456789abcdef".utf8)
        let user = UserRecord(
            id: "alice", passwordSalt: secret, passwordRounds: 7, passwordHash: secret, createdAt: Date(timeIntervalSince1970: 0))
        let challenge = ChallengeRecord(
            id: ChallengeID(bytes: secret), binding: .login, relyingPartyID: "rp", userID: "alice", deviceID: "d1", nonce: secret,
            createdAt: Date(timeIntervalSince1970: 0),
            expiresAt: Date(timeIntervalSince1970: 60))
        for value in [user as Any, challenge as Any] {
            var dumped = ""
            dump(value, to: &dumped)
            let shown = ["\(value)", String(reflecting: value), dumped].joined()
            #expect(!shown.contains("0123456789abcdef") && !shown.contains("32 bytes") && shown.contains("alice"), "\(shown)")
        }
    }

    /// An enrolment request's approval hash covers a 40-bit binding code, which a brute force
    /// would recover from it: neither the code nor the hash shows in the record's description,
    /// `dump()` or a binding code's own.
    @Test func anEnrolmentRequestShowsNoApprovalHashOrBindingCode() throws {
        let code = BindingCode.random()
        let request = EnrolmentRequestRecord(
            id: "r1", userID: "alice", deviceID: "d2", name: "Pad", publicKey: Data(repeating: 1, count: 91), replacing: false,
            sessionID: "s1",
            createdAt: Date(timeIntervalSince1970: 0), expiresAt: Date(timeIntervalSince1970: 900)
        ).bound(to: code)
        let digest = try #require(request.approvalHash).digest
        for value in [request as Any, code as Any] {
            var dumped = ""
            dump(value, to: &dumped)
            let shown = ["\(value)", String(reflecting: value), dumped].joined()
            #expect(
                !shown.contains("bytes: 32 elements") && !shown.contains(digest.map { String(format: "%02x", $0) }.joined()), "\(shown)")
            #expect(!shown.contains(code.text) && !shown.contains(code.text.replacingOccurrences(of: "-", with: "")), "\(shown)")
        }
    }

    @Test func idsOfDifferentRecordsAreDifferentTypesWithTheSameText() throws {
        let device: DeviceID = "d-1"
        let encoded = try JSONEncoder().encode(device)
        #expect(String(decoding: encoded, as: UTF8.self) == #""d-1""#)
        #expect(try JSONDecoder().decode(DeviceID.self, from: encoded) == device)
        #expect(UserID(device.rawValue).rawValue == device.rawValue)
    }

    /// New ids are version 4 UUIDs in lower case, each different.
    @Test func aRandomIDIsALowerCaseVersion4UUID() throws {
        let ids = (0..<1_000).map { _ in DeviceID.random().rawValue }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let uuid = try #require(UUID(uuidString: id), "\(id)")
            #expect(uuid.uuidString.lowercased() == id)
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4 && bytes[8] >> 6 == 0b10, "\(id)")
        }
    }
}
