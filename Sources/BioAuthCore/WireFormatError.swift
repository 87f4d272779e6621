/// Input that does not have the exact form protocol v1 requires.
///
/// It names the field and what is wrong with it, never the field's value: values may be keys,
/// signatures or nonces.
public struct WireFormatError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What is wrong. Extensible: new codes may be added in minor releases.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        public static let malformedBase64 = Code("malformedBase64")
        public static let wrongLength = Code("wrongLength")
        public static let notP256SPKI = Code("notP256SPKI")
        public static let invalidPoint = Code("invalidPoint")
        public static let malformedSignature = Code("malformedSignature")
        public static let malformedPEM = Code("malformedPEM")
        public static let malformedJWK = Code("malformedJWK")
        public static let malformedJSON = Code("malformedJSON")
        public static let missingField = Code("missingField")
        public static let unknownField = Code("unknownField")
        /// A JSON object names the same key twice (never first-wins or last-wins).
        public static let duplicateField = Code("duplicateField")
        public static let invalidValue = Code("invalidValue")
        public static let tooLarge = Code("tooLarge")
        public static let malformedCiphertext = Code("malformedCiphertext")
    }

    public let code: Code
    /// The field (JSON key or logical name) the error is about.
    public let field: String

    public init(_ code: Code, field: String) {
        self.code = code
        self.field = field
    }

    public var description: String { "\(field): \(code)" }
    public var debugDescription: String { "WireFormatError(code: \(code), field: \(field))" }
}
