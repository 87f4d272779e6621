import Foundation

/// Short codes a person reads on one screen and types on another (recovery codes, binding
/// codes): Crockford base32, 5 bits a character, shown in groups of four.
public enum CrockfordCode {
    /// The 32 characters: digits, then letters without I, L, O and U.
    public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// `characters` random characters (a multiple of 4), grouped `XXXX-XXXX…`.
    public static func random(characters: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let text = String((0..<characters).map { _ in alphabet[Int(generator.next(upperBound: UInt8(32)))] })
        return stride(from: 0, to: characters, by: 4).map { String(text.dropFirst($0).prefix(4)) }.joined(separator: "-")
    }

    /// What a person typed, as Crockford base32 reads it: case, dashes and spaces ignored, O read
    /// as 0, I and L as 1.
    public static func normalised(_ entered: String) -> String {
        String(
            entered.uppercased().compactMap { character -> Character? in
                switch character {
                case "-", " ": nil
                case "O": "0"
                case "I", "L": "1"
                default: character
                }
            })
    }
}
