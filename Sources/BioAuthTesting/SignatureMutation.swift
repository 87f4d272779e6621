import BioAuthCore
import Foundation

/// Signature mutations for negative tests.
public enum SignatureMutation {
    /// The P-256 group order n.
    public static let order = Data(hexString: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!

    /// n − s: the high-S twin of a valid signature's s (32 bytes, big-endian).
    public static func negate(_ s: Data) -> Data {
        let n = [UInt8](order), s = [UInt8](s)
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in (0..<32).reversed() {
            var d = Int(n[i]) - Int(s[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            out[i] = UInt8(d)
        }
        return Data(out)
    }
}
