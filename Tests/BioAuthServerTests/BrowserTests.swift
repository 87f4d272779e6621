import BioAuth
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sign-in page in a real browser: Debian's `chromium-headless-shell`, driven by Playwright
/// (`Tests/Browser/passkeys.py`) with a DevTools virtual authenticator as the passkey, against two
/// `bioauth-server` processes on loopback (`http://localhost` is a secure context). `.ci/run`
/// installs both and names them in `BIOAUTH_TEST_BROWSER` and `BIOAUTH_TEST_PYTHON`; elsewhere the
/// suite is skipped without them, under `.ci/run` (`BIOAUTH_REQUIRE_SERVICES=1`) it must run.
/// Screenshots of each page go to `.build/test-output/browser/`.
@Suite(.enabled(if: Browser.available || TestServices.required, Browser.skipReason))
struct BrowserTests {
    @Test(.timeLimit(.minutes(3)))
    func passkeysRegisterAndSignInOnTheSignInPage() async throws {
        let chromium = try #require(
            Browser.chromium, "BIOAUTH_TEST_BROWSER is not set: run .ci/run, which installs chromium-headless-shell")
        let python = try #require(Browser.python, "BIOAUTH_TEST_PYTHON is not set: run .ci/run, which installs Playwright")
        let (server, serverURL) = try Browser.server()
        defer { _ = server.stop() }
        let (bound, boundURL) = try Browser.server(extra: ["--passkeys-device-bound-only"])
        defer { _ = bound.stop() }
        let shots = PackagePaths.root.appendingPathComponent(".build/test-output/browser").path
        try? FileManager.default.removeItem(atPath: shots)
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let script = PackagePaths.root.appendingPathComponent("Tests/Browser/passkeys.py").path
        // carol has a phone: her passkey waits for its approval, which this test gives.
        let http = ServerClient(baseURL: serverURL)
        let phone = SoftwareDevice()
        #expect(try await http.post("/v1/users", ["username": "carol", "password": Browser.password]).status == 201)
        let primary = try await http.post("/v1/login/password", ["username": "carol", "password": Browser.password])["token"]
        let challenge = try await http.post(
            "/v1/devices/registration/challenge", ["name": "Carol's phone", "publicKey": phone.spki], token: primary)
        let phoneID = try await http.post(
            "/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge.text)],
            token: primary)["id"]
        let run = Process()
        run.executableURL = URL(fileURLWithPath: python)
        run.arguments = [script, chromium, serverURL, boundURL, shots]
        let output = Pipe()
        run.standardOutput = output
        run.standardError = output
        try run.run()
        // dave has a phone too — the emulated iPhone with BioAuthClient, the code an app ships: it
        // lets the page in when the page asks, with the number the page shows.
        let davesPhone = EmulatedDevice(biometry: .faceID)
        let dave = BioAuthClient(server: try #require(URL(string: serverURL)), relyingPartyID: "localhost", platform: davesPhone.platform)
        try await dave.signUp(username: "dave", password: Browser.password)
        _ = try await dave.enrol(try await dave.signIn(username: "dave", password: Browser.password), deviceName: "Dave's iPhone")
        let reader = Task.detached { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        try await Browser.approveWhenAsked(in: shots, http: http, phone: phone, phoneID: phoneID)
        for attempt in ["wrong", "right"] {
            try await Browser.approveSignIn(in: shots, attempt: attempt, phone: dave)
        }
        let text = await reader.value
        run.waitUntilExit()
        print(text)
        #expect(run.terminationStatus == 0, "\(text)")
        #expect(!text.contains("FAIL") && text.components(separatedBy: "\nok ").count > 10, "\(text)")
        for name in [
            "1-sign-in", "2-account", "3-passkey-created", "4-signed-in-with-passkey", "6-synced-passkey-refused",
            "7-passkey-waits-for-the-phone", "8-passkey-approved-by-the-phone", "9-approve-on-my-phone", "10-approved-by-the-phone",
            "11-passkey-after-the-phones-approval",
        ] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/\(name).png"), "\(name).png")
        }
    }
}

enum Browser {
    static let chromium = ProcessInfo.processInfo.environment["BIOAUTH_TEST_BROWSER"].flatMap { $0.isEmpty ? nil : $0 }
    static let python = ProcessInfo.processInfo.environment["BIOAUTH_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
    static var available: Bool { chromium != nil && python != nil }
    static let password = "correct horse battery staple"

    /// The phone's part: once the page wrote the waiting request (`pending.json`), a device login,
    /// a step-up over the request's text with the binding code the page shows, the approval; then
    /// `approved` tells the page to finish.
    static func approveWhenAsked(in folder: String, http: ServerClient, phone: SoftwareDevice, phoneID: String) async throws {
        let pending = URL(fileURLWithPath: folder).appendingPathComponent("pending.json")
        let deadline = Date().addingTimeInterval(90)
        while !FileManager.default.fileExists(atPath: pending.path), Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let asked = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: pending)) as? [String: String], "the page never asked")
        let login = try await http.post("/v1/login/challenge", ["userId": "carol", "deviceId": phoneID])
        let session = try await http.post(
            "/v1/login/finish", ["challengeId": login["challengeId"], "signature": try phone.sign(login.text)])["token"]
        let request = try await http.get("/v1/enrolment-requests/\(asked["id"] ?? "")", token: session)
        let text = EnrolmentApprovalText.signed(request["approvalText"], bindingCode: asked["bindingCode"] ?? "")
        let stepUp = try await http.post(
            "/v1/step-up/challenge", ["deviceId": phoneID, "operation": Base64URL.encode(Data(text.utf8))], token: session)
        let approval = try await http.post(
            "/v1/step-up/finish", ["challengeId": stepUp["challengeId"], "signature": try phone.sign(stepUp.text)], token: session)
        let approved = try await http.post(
            "/v1/enrolment-requests/\(asked["id"] ?? "")/approve", ["approval": approval["approval"]], token: session)
        #expect(approved.status == 204, "\(approved.text)")
        _ = FileManager.default.createFile(atPath: URL(fileURLWithPath: folder).appendingPathComponent("approved").path, contents: Data())
    }
    /// The phone's part of "Approve on my phone": once the page wrote the number it shows
    /// (`number.json`, this `attempt`), the app signs in, lists the request — from Chromium — and
    /// approves it with that number (another one for the `wrong` attempt, which the server refuses).
    static func approveSignIn(in folder: String, attempt: String, phone: BioAuthClient) async throws {
        let shown = URL(fileURLWithPath: folder).appendingPathComponent("number.json")
        let deadline = Date().addingTimeInterval(90)
        var asked: [String: String] = [:]
        while asked["attempt"] != attempt, Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            asked = (try? JSONSerialization.jsonObject(with: Data(contentsOf: shown)) as? [String: String]) ?? [:]
        }
        let number = try #require(asked["number"], "the page never showed a number")
        try await phone.logIn()
        let requests = try await phone.signInRequests()
        let request = try #require(requests.first, "the phone sees no request")
        #expect(requests.count == 1 && request.userAgent.contains("Chrome") && request.text.contains(request.requester))
        guard attempt == "right" else {
            let wrong = String(format: "%04d", ((Int(number) ?? 0) + 1) % 10_000)
            await #expect(throws: ClientError.self) { try await phone.approveSignIn(request, number: wrong) }
            return
        }
        try await phone.approveSignIn(request, number: number)
    }

    static let skipReason: Comment = "no BIOAUTH_TEST_BROWSER (chromium-headless-shell) with Playwright: .ci/run installs them"

    /// A server with the sign-in page and passkeys for `http://localhost:<its port>`: the port is
    /// chosen first, since the origin names it.
    static func server(extra: [String] = []) throws -> (ServerProcess, String) {
        let port = try freePort()
        let origin = "http://localhost:\(port)"
        let process = try ServerProcess(
            database: ":memory:",
            extra: [
                "--port", "\(port)", "--sign-in-page", "--cross-device-sign-in", "--passkey-rp-id", "localhost", "--passkey-origin", origin,
            ]
                + extra)
        return (process, origin)
    }

    /// A loopback port nothing listens on now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
