import BioAuthCore
import Crypto
import Foundation

/// A one-time recovery code: 12 characters of Crockford base32 (60 bits), shown as
/// `XXXX-XXXX-XXXX`. Never in a description, `dump()` or log line.
public struct RecoveryCode: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the user types; compare with ``hash(ofEntered:)``.
    public let text: String

    public static func random() -> RecoveryCode { RecoveryCode(text: CrockfordCode.random(characters: 12)) }

    private init(text: String) { self.text = text }

    /// The stored form: SHA-256 of the normalised code.
    public var hash: TokenHash { Self.hash(ofEntered: text) }

    /// SHA-256 of what a user typed, normalised as Crockford base32 reads (`CrockfordCode.normalised(_:)`).
    public static func hash(ofEntered entered: String) -> TokenHash { TokenHash(ofText: CrockfordCode.normalised(entered)) }

    public var description: String { "RecoveryCode(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// How a deployment delivers recovery codes to a user out of band (e-mail, SMS, a support desk).
/// The server makes the code, keeps only its hash, counts attempts and deliveries, and decides; a
/// channel only delivers. Without one, a device can be added only with another device's approval.
public protocol RecoveryChannel: Sendable {
    /// Delivers `message` to its user. A thrown error fails the request with 503 (the delivery
    /// still counts against ``RecoveryCodeLimits``).
    func deliver(_ message: RecoveryMessage) async throws
}

/// One recovery code on its way to a user. It carries nothing the requester chose: no device name,
/// no free text — a password session cannot make the owner's inbox say what it likes. The key
/// appears only as its fingerprint, which the new phone also shows.
public struct RecoveryMessage: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the code confirms.
    public enum Purpose: String, Sendable, Hashable {
        /// Adding a device, or a new key for one (an enrolment request).
        case enrolment
        /// Removing a device after the security delay (a device removal).
        case deviceRemoval
        /// A password login from an address the user never signed in from, while strangers'
        /// wrong passwords slow such logins down (`POST /v1/login/password/code`).
        case signIn
    }

    public let purpose: Purpose
    public let userID: UserID
    /// The enrolment request the code approves; for a device removal, the removal's id (as
    /// ``removalID``), so that a channel files every code under the id it belongs to.
    public let requestID: EnrolmentRequestID
    /// The device removal the code confirms; nil for an enrolment.
    public let removalID: DeviceRemovalID?
    public let code: RecoveryCode
    /// A new key for an existing device rather than a new device (false for a removal).
    public let replacing: Bool
    /// `DevicePublicKey.fingerprint` of the key the code lets in, or of the device's key a
    /// removal takes away.
    public let keyFingerprint: String
    /// When the code stops working.
    public let expiresAt: Date
    /// How long after the code is entered a removal happens; nil for an enrolment.
    public let removalDelay: TimeInterval?
    /// For a sign-in code, the address (an IPv4 address or an IPv6 /48) it works from.
    public let clientAddress: String?

    public init(_ code: RecoveryCode, for request: EnrolmentRequestRecord) {
        purpose = .enrolment
        userID = request.userID
        requestID = request.id
        removalID = nil
        self.code = code
        replacing = request.replacing
        keyFingerprint = DevicePublicKey.fingerprint(spki: request.publicKey)
        expiresAt = request.expiresAt
        removalDelay = nil
        clientAddress = nil
    }

    /// A sign-in code for `userID`'s password login from `clientAddress`, filed under `id` (a new
    /// one each code: nothing refers to it but the channel).
    public init(signIn code: RecoveryCode, userID: UserID, clientAddress: String, id: EnrolmentRequestID, expiresAt: Date) {
        purpose = .signIn
        self.userID = userID
        requestID = id
        removalID = nil
        self.code = code
        replacing = false
        keyFingerprint = ""
        self.expiresAt = expiresAt
        removalDelay = nil
        self.clientAddress = clientAddress
    }

    public init(_ code: RecoveryCode, for removal: DeviceRemovalRecord, of device: DeviceRecord, delay: TimeInterval) {
        purpose = .deviceRemoval
        userID = removal.userID
        requestID = EnrolmentRequestID(removal.id.rawValue)
        removalID = removal.id
        self.code = code
        replacing = false
        keyFingerprint = DevicePublicKey.fingerprint(spki: device.publicKey)
        expiresAt = removal.codeExpiresAt
        removalDelay = delay
        clientAddress = nil
    }

    /// The message, in English, from the fields above only.
    public var text: String {
        switch purpose {
        case .enrolment:
            let what = replacing ? "a new key for one of your devices" : "a new device"
            return """
                Your BioAuth recovery code is \(code.text)
                It lets \(what) (key \(keyFingerprint)) be added to your account until \(expiresAt.formatted(.iso8601)).
                If you did not ask for it, do not give it to anyone, and change your password.
                """
        case .deviceRemoval:
            let hours = Int(((removalDelay ?? 0) / 3600).rounded(.up))
            return """
                Your BioAuth recovery code is \(code.text)
                It confirms removing the device with key \(keyFingerprint) from your account, \(hours) hours after the code is entered, unless one of your devices cancels it. It works until \(expiresAt.formatted(.iso8601)).
                If you did not ask for it, do not give it to anyone, cancel the removal on your phone, and change your password.
                """
        case .signIn:
            return """
                Your BioAuth sign-in code is \(code.text)
                It lets a password sign-in from the network \(clientAddress ?? "unknown") into your account until \(expiresAt.formatted(.iso8601)).
                If you did not ask for it, do not give it to anyone, and change your password.
                """
        }
    }

    public var description: String { "RecoveryMessage(userID: \(userID), requestID: \(requestID), code: redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["purpose": purpose, "userID": userID, "requestID": requestID, "replacing": replacing])
    }
}

/// The demo's recovery channel: writes each code to `‹directory›/recovery-‹request id›.txt`
/// (mode 0600, in a directory of mode 0700), as an e-mail would arrive, where `bioauth` reads it.
public struct DirectoryRecoveryChannel: RecoveryChannel {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func deliver(_ message: RecoveryMessage) async throws {
        let file =
            message.purpose == .signIn
            ? Self.signInFile(for: message.userID, in: directory) : Self.file(for: message.requestID, in: directory)
        let text = "To: \(message.userID)\n\(message.text)\n"
        // The inbox holds live recovery codes: a 0700 directory of 0600 files, from their first byte.
        try PrivateFile.makeDirectory(directory)
        try PrivateFile.write(Data(text.utf8), to: file.path)
    }

    /// The code delivered for a request (the word of its file shaped `XXXX-XXXX-XXXX`), nil if none was.
    public static func readCode(for requestID: EnrolmentRequestID, in directory: URL) -> String? {
        guard !requestID.rawValue.isEmpty, requestID.rawValue.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
        return code(in: file(for: requestID, in: directory))
    }

    /// The last sign-in code delivered to `userID` (``RecoveryMessage/Purpose-swift.enum/signIn``), nil if none was.
    public static func readSignInCode(for userID: UserID, in directory: URL) -> String? {
        code(in: signInFile(for: userID, in: directory))
    }

    /// Where the sign-in codes for a user are written, the last one over the one before.
    public static func signInFile(for userID: UserID, in directory: URL) -> URL {
        directory.appendingPathComponent("sign-in-\(Data(userID.rawValue.utf8).hexString).txt")
    }

    /// The word of `file` shaped `XXXX-XXXX-XXXX`.
    private static func code(in file: URL) -> String? {
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init).first { word in
            word.count == 14
                && word.enumerated().allSatisfy { index, character in
                    [4, 9].contains(index) ? character == "-" : CrockfordCode.alphabet.contains(character)
                }
        }
    }

    /// Where the code for a request is written.
    public static func file(for requestID: EnrolmentRequestID, in directory: URL) -> URL {
        directory.appendingPathComponent("recovery-\(requestID).txt")
    }
}
