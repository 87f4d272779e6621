import BioAuthAttestation
import Foundation
import Testing

struct CBORTests {
    @Test func whatItEncodesItDecodes() throws {
        let item = CBOR.map([
            (.text("fmt"), .text("apple-appattest")), (.unsigned(1), .negative(6)), (.negative(0), .bytes(Data(repeating: 7, count: 300))),
            (.text("list"), .array([.bool(true), .bool(false), .null, .unsigned(70_000), .unsigned(1 << 40)])),
        ])
        #expect(try CBOR(decoding: item.encoded) == item)
        #expect(item["fmt"]?.textValue == "apple-appattest")
        #expect(item["absent"] == nil)
    }

    @Test(
        arguments: [
            ([0x18], CBORError.Code.truncated),  // a one-byte argument missing
            ([0x00, 0x00], .trailingBytes),
            ([0x5F, 0xFF], .indefiniteLength),
            ([0x18, 0x05], .notShortest),  // 5 in two bytes
            ([0x19, 0x00, 0x10], .notShortest),
            ([0x1C], .reserved),
            ([0xC1, 0x00], .unsupported),  // a tag
            ([0xF9, 0x00, 0x00], .unsupported),  // a half float
            ([0x62, 0xC3, 0x28], .invalidUTF8),
            ([0xA2, 0x01, 0x00, 0x01, 0x00], .duplicateKey),
            ([0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], .truncated),  // a huge count is not an allocation
            (Array(repeating: 0x81, count: 17) + [0x00], .tooDeep),
        ] as [([UInt8], CBORError.Code)])
    func refusedWithItsReason(bytes: [UInt8], code: CBORError.Code) {
        #expect(throws: CBORError.self) { try CBOR(decoding: bytes) }
        do { _ = try CBOR(decoding: bytes) } catch { #expect(error.code == code) }
    }

    /// Random bytes and random single-byte changes of a real-shaped object: decoded or refused, never a crash,
    /// and whatever decodes encodes back to the same bytes (one encoding per value).
    @Test func randomInputIsDecodedOrRefused() {
        var generator = SystemRandomNumberGenerator()
        let sample = CBOR.map([
            (.text("fmt"), .text("apple-appattest")),
            (.text("attStmt"), .map([(.text("x5c"), .array([.bytes(Data(repeating: 1, count: 40))]))])),
        ]).encoded
        var decoded = 0
        for round in 0..<20_000 {
            let bytes: [UInt8]
            if round.isMultiple(of: 2) {
                bytes = (0..<Int.random(in: 0...24, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                var mutated = [UInt8](sample)
                mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                bytes = mutated
            }
            if let item = try? CBOR(decoding: bytes) {
                #expect(item.encoded == Data(bytes))
                decoded += 1
            }
        }
        #expect(decoded > 0)
    }
}
