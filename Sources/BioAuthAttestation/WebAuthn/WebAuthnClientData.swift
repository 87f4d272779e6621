import BioAuthCore
import Foundation

/// The client data a browser or platform signs over (WebAuthn §5.8.1), as the relying party
/// reads it from `clientDataJSON`.
public struct WebAuthnClientData: Sendable, Hashable {
    /// `webauthn.create` or `webauthn.get`.
    public let type: String
    /// The challenge, base64url-decoded.
    public let challenge: Data
    /// The caller's origin: `https://example.com`, or `android:apk-key-hash:…` for an Android app.
    public let origin: String
    /// True when the ceremony ran in a cross-origin iframe.
    public let crossOrigin: Bool
    /// The top-level origin of a cross-origin ceremony.
    public let topOrigin: String?

    private struct Fields: Decodable {
        let type: String
        let challenge: String
        let origin: String
        let crossOrigin: Bool?
        let topOrigin: String?
    }

    /// Reads `clientDataJSON` (UTF-8 JSON with at least `type`, `challenge` and `origin`).
    public init(json: Data) throws(WebAuthnError) {
        // A member named twice (two `origin`s) is refused: parsers disagree on which one counts.
        let shape = JSONShape(of: json, maximumDepth: 8)
        guard shape.duplicateKey == nil, shape.depth <= 8, !shape.trailingComma else {
            throw WebAuthnError(.malformed, "clientDataJSON names a member twice or is not strict JSON")
        }
        let fields: Fields
        do { fields = try JSONDecoder().decode(Fields.self, from: json) } catch {
            throw WebAuthnError(.malformed, "clientDataJSON is not JSON with type, challenge and origin")
        }
        guard let challenge = Base64URL.decode(fields.challenge) else {
            throw WebAuthnError(.malformed, "clientDataJSON's challenge is not base64url")
        }
        type = fields.type
        self.challenge = challenge
        origin = fields.origin
        crossOrigin = fields.crossOrigin ?? false
        topOrigin = fields.topOrigin
    }
}
