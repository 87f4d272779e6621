import BioAuthSQL
import BioAuthServer
import Foundation
import NIOCore
import PostgresNIO

// BioAuth's typed values bind as the column types `Schema` gives them: ids and audit kinds as
// `text`, token hashes as `bytea`.

extension RecordID: PostgresEncodable, PostgresNonThrowingEncodable {
    public static var psqlType: PostgresDataType { String.psqlType }
    public static var psqlFormat: PostgresFormat { String.psqlFormat }

    public func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        rawValue.encode(into: &byteBuffer, context: context)
    }
}

extension TokenHash: PostgresEncodable, PostgresNonThrowingEncodable {
    public static var psqlType: PostgresDataType { Data.psqlType }
    public static var psqlFormat: PostgresFormat { Data.psqlFormat }

    public func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        digest.encode(into: &byteBuffer, context: context)
    }
}

extension AuditKind: PostgresEncodable, PostgresNonThrowingEncodable {
    public static var psqlType: PostgresDataType { String.psqlType }
    public static var psqlFormat: PostgresFormat { String.psqlFormat }

    public func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        description.encode(into: &byteBuffer, context: context)
    }
}
