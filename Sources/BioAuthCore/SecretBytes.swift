import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Bytes that must never be printed: a stored secret, a key, a token.
///
/// `description`, `debugDescription` and reflection show only the length. Equality is
/// constant-time. Read the bytes with ``withUnsafeBytes(_:)`` or ``data`` where you need them.
public struct SecretBytes: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let storage: Data

    public init(_ data: Data) { storage = data }
    public init<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 { storage = Data(bytes) }

    /// `count` bytes from the system CSPRNG, the source `SystemRandomNumberGenerator` documents
    /// (developer.apple.com/documentation/swift/systemrandomnumbergenerator): `arc4random_buf(3)`
    /// on Apple platforms; elsewhere `getentropy(3)`, one `getrandom(2)` system call per 256 bytes
    /// where the generator makes one per 8.
    public static func random(count: Int) -> SecretBytes {
        var bytes = Data(count: count)
        bytes.withUnsafeMutableBytes { buffer in
            guard let start = buffer.baseAddress else { return }
            #if canImport(Darwin)
                arc4random_buf(start, buffer.count)
            #else
                var offset = 0
                while offset < buffer.count {
                    let length = min(256, buffer.count - offset)  // getentropy's limit per call
                    // It fails only for a bad buffer or a kernel without a random source: nothing to go on with.
                    guard getentropy(start + offset, length) == 0 else { fatalError("the system's random source failed") }
                    offset += length
                }
            #endif
        }
        return SecretBytes(bytes)
    }

    /// The secret's bytes. Handle them as carefully as the secret itself.
    public var data: Data { storage }
    public var count: Int { storage.count }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }

    public var description: String { "SecretBytes(\(storage.count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": storage.count]) }

    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        constantTimeEquals(lhs.storage, rhs.storage)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(Data(SHA256.hash(data: storage))) }
}

/// Compares two byte strings in time that depends only on their lengths.
public func constantTimeEquals<A: DataProtocol, B: DataProtocol>(_ a: A, _ b: B) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}
