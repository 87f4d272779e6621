import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// The demo's recovery inbox holds live codes: nobody but its owner reads them, from the first byte.
struct RecoveryInboxTests {
    @Test func codesAreOwnerOnlyFilesInAnOwnerOnlyDirectory() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-inbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let inbox = root.appendingPathComponent("recovery")
        let channel = DirectoryRecoveryChannel(directory: inbox)
        let request = EnrolmentRequestRecord(
            id: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", userID: "alice", deviceID: "d2", name: "Pad",
            publicKey: Data(repeating: 1, count: 91),
            replacing: false, sessionID: "s1", createdAt: Date(timeIntervalSince1970: 0), expiresAt: Date(timeIntervalSince1970: 900))
        func permissions(_ url: URL) throws -> Int? {
            try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        }
        for _ in 0..<2 {  // a second code for the request replaces the first, still owner-only
            let code = RecoveryCode.random()
            try await channel.deliver(RecoveryMessage(code, for: request))
            let file = DirectoryRecoveryChannel.file(for: request.id, in: inbox)
            #expect(try permissions(inbox) == 0o700 && permissions(file) == 0o600)
            #expect(DirectoryRecoveryChannel.readCode(for: request.id, in: inbox) == code.text)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: inbox.path).count == 1, "no temporary file is left behind")
    }
}
