import Foundation

/// The text a device shows — and signs the SHA-256 of, in a step-up — to approve adding another
/// device to its user's account. Server and client build it from the same name and key, so the
/// approving phone shows what it computed itself, not what a server sent.
public enum EnrolmentApprovalText {
    /// `Add device ‹name›, key ‹fingerprint›`, or for a new key of an existing device
    /// `Replace the key of device ‹name›, new key ‹fingerprint›`. The fingerprint is
    /// ``DevicePublicKey/fingerprint``: the first 8 bytes of the SHA-256 of the SPKI, in hex.
    public static func make(deviceName: String, fingerprint: String, replacing: Bool) -> String {
        replacing ? "Replace the key of device \(deviceName), new key \(fingerprint)" : "Add device \(deviceName), key \(fingerprint)"
    }

    /// The bytes an approving device signs (their SHA-256 is the step-up's operation hash): the
    /// shown `text`, then `, code ‹binding code›` — the code the new phone shows, as the user typed
    /// it on the approving phone, normalised (``CrockfordCode/normalised(_:)``). Only someone who
    /// sees the new phone's screen knows it, so one tap on an attacker's request approves nothing.
    public static func signed(_ text: String, bindingCode: String) -> String { text + ", code " + CrockfordCode.normalised(bindingCode) }

    /// The text for a key given as SPKI DER.
    public static func make(deviceName: String, publicKey spki: Data, replacing: Bool) -> String {
        make(deviceName: deviceName, fingerprint: DevicePublicKey.fingerprint(spki: spki), replacing: replacing)
    }
}
