import BioAuth
import BioAuthTestServer
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Foundation
import Testing

// README-EXAMPLE-BEGIN
func signIn(to serverURL: URL, password: String) async throws {
    let phone = EmulatedDevice(biometry: .faceID)  // on a device: DevicePlatform.system (BioAuthApple)
    let client = BioAuthClient(server: serverURL, relyingPartyID: "localhost", platform: phone.platform)

    if try await client.registration() == nil {  // once: a primary login enrols the Secure Enclave key
        let primary = try await client.signIn(username: "alice", password: password)
        try await client.enrol(primary, deviceName: "Alice's iPhone")  // one Face ID prompt
    }
    do {
        let session = try await client.logIn()  // one prompt; the server's nonce, checked, then signed
        let approval = try await client.approve(operation: "Pay 100.00 EUR to Bob")  // one prompt
        print(session.userID, approval.expiresAt)  // send approval.token to your backend to redeem
    } catch let error where error.code == .reenrolmentRequired {
        // A face or finger was added: sign in with the password again, then client.reenrol(_:).
    }
}
// README-EXAMPLE-END

/// The README's example is this file's, byte for byte, and it runs.
struct ReadmeClientExampleTests {
    @Test func theReadmeShowsThisExampleExactly() throws {
        #expect(
            try PackagePaths.document(
                "README.md", printsBlock: "README-EXAMPLE", of: "Tests/BioAuthClientTests/ReadmeClientExampleTests.swift"),
            "README.md's first example differs from the one this test runs")
    }

    @Test func theReadmeExampleRunsAgainstAServer() async throws {
        try await InProcessServer.with { server in
            let api = ServerAPI(transport: URLSessionTransport(baseURL: URL(string: server.url)!))
            _ = try await api.createUser(.init(username: "alice", password: "alice's long password"))
            try await signIn(to: URL(string: server.url)!, password: "alice's long password")
        }
    }
}
