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

    /// The text for a key given as SPKI DER.
    public static func make(deviceName: String, publicKey spki: Data, replacing: Bool) -> String {
        make(deviceName: deviceName, fingerprint: DevicePublicKey.fingerprint(spki: spki), replacing: replacing)
    }
}
