import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// Strict column access: a missing column or a NULL where the schema forbids one is
/// ``StoreError`` `corruptRow`, never a default.
extension PostgresRandomAccessRow {
    func value<T: PostgresDecodable>(_ name: String, _: T.Type = T.self) throws(StoreError) -> T {
        guard let value = try optional(name, T.self) else { throw StoreError(.corruptRow, detail: "column \(name)") }
        return value
    }

    func optional<T: PostgresDecodable>(_ name: String, _: T.Type) throws(StoreError) -> T? {
        guard contains(name) else { throw StoreError(.corruptRow, detail: "missing column \(name)") }
        let cell = self[name]
        guard cell.bytes != nil else { return nil }
        do { return try cell.decode(T.self) } catch { throw StoreError(.corruptRow, detail: "column \(name)") }
    }
}

/// A row read strictly through ``StoredRow``: a missing column or a value that does not decode is
/// ``StoreError`` `corruptRow`, never a default.
struct PostgresStoredRow: StoredRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRandomAccessRow) { self.row = row }
    init(_ row: PostgresRow) { self.row = row.makeRandomAccess() }

    func optionalString(_ column: String) throws(StoreError) -> String? { try row.optional(column, String.self) }
    func optionalData(_ column: String) throws(StoreError) -> Data? { try row.optional(column, Data.self) }
    func optionalInt(_ column: String) throws(StoreError) -> Int? { try row.optional(column, Int.self) }
    func optionalDate(_ column: String) throws(StoreError) -> Date? { try row.optional(column, Date.self) }
    func optionalBool(_ column: String) throws(StoreError) -> Bool? { try row.optional(column, Bool.self) }
}

extension PostgresRandomAccessRow {
    /// The device row joined in as ``PostgresQuery/deviceColumns`` (`d_…`); nil when the join
    /// found none (`d_id` NULL).
    func joinedDevice() throws(StoreError) -> DeviceRecord? {
        try optional("d_id", String.self) == nil ? nil : try DeviceRecord(row: PostgresStoredRow(self), prefix: "d_")
    }
}
