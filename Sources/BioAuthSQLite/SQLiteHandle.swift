import BioAuthSQL
import BioAuthServer
import CBioAuthSQLite
import Foundation
import VaporCSQLite

/// A value bound to, or read from, one SQLite column.
enum SQLValue: Sendable, Hashable {
    case integer(Int)
    case float(Double)
    case string(String)
    case bytes(Data)
    case null

    static func text(_ text: String) -> SQLValue { .string(text) }
    static func text<Record>(_ id: RecordID<Record>) -> SQLValue { .string(id.rawValue) }
    static func text(_ kind: AuditKind) -> SQLValue { .string(kind.description) }
    static func blob(_ data: Data) -> SQLValue { .bytes(data) }
    static func blob(_ hash: TokenHash) -> SQLValue { .bytes(hash.digest) }
    static func date(_ date: Date) -> SQLValue { .float(date.timeIntervalSince1970) }
    static func optionalDate(_ date: Date?) -> SQLValue { date.map { .date($0) } ?? .null }
    static func optionalText(_ text: String?) -> SQLValue { text.map { .string($0) } ?? .null }
    static func optionalText<Record>(_ id: RecordID<Record>?) -> SQLValue { id.map { .string($0.rawValue) } ?? .null }
    static func optionalBlob(_ data: Data?) -> SQLValue { data.map { .bytes($0) } ?? .null }
    static func optionalBlob(_ hash: TokenHash?) -> SQLValue { hash.map { .bytes($0.digest) } ?? .null }

    var isNull: Bool { self == .null }

    /// A parameter of a statement written once (``SQL``), as SQLite stores it: dates as seconds
    /// since 1970, booleans as 0 or 1.
    init(_ value: SQL.Value) {
        self =
            switch value {
            case .text(let text): text.map { .string($0) } ?? .null
            case .bytes(let data): data.map { .bytes($0) } ?? .null
            case .integer(let number): number.map { .integer($0) } ?? .null
            case .date(let date): date.map { .date($0) } ?? .null
            case .boolean(let flag): flag.map { .integer($0 ? 1 : 0) } ?? .null
            // The SQLite dialect binds no arrays: `oneOf` renders one parameter per element.
            case .texts(let texts): .string(texts.joined(separator: ","))
            }
    }
}

/// One result row: the statement's column names and this row's values.
struct SQLRow: Sendable {
    let names: [String]
    let values: [SQLValue]

    func column(_ name: String) -> SQLValue? { names.firstIndex(of: name).map { values[$0] } }
}

/// A sqlite3 connection and its prepared statements, used by one thread only (the
/// ``SQLiteWriter``'s); `Sendable` so that thread can be handed it.
final class SQLiteHandle: @unchecked Sendable {
    private var db: OpaquePointer?
    private var statements: [String: PreparedStatement] = [:]

    private struct PreparedStatement {
        let pointer: OpaquePointer
        var names: [String]
    }

    /// Most statements kept prepared; the SQL the store runs has far fewer shapes.
    private static let cacheLimit = 256

    /// Opens (creating if needed) the database at `path`.
    /// - Throws: ``StoreError`` `unavailable`.
    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite_nio_sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            sqlite_nio_sqlite3_close_v2(db)
            throw StoreError(.unavailable, detail: "sqlite open failed (\(code))")
        }
        // Plans never depend on bound values (every lookup is by key), so a statement is prepared
        // once: without this SQLite re-prepares some on every new binding.
        let stable = bioauth_sqlite_enable_qpsg(db)
        guard stable == SQLITE_OK else {
            sqlite_nio_sqlite3_close_v2(db)
            throw StoreError(.unavailable, detail: "sqlite configuration failed (\(stable))")
        }
        self.db = db
    }

    /// Finalizes every statement and closes the connection.
    func close() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement.pointer) }
        statements = [:]
        sqlite_nio_sqlite3_close_v2(db)
        db = nil
    }

    func execute(_ sql: String) throws { try query(sql) }

    /// Runs a statement written once for both stores, in SQLite's dialect.
    @discardableResult
    func query(_ statement: SQL) throws -> [SQLRow] {
        let (text, values) = statement.rendered(in: .sqlite)
        return try query(text, values.map(SQLValue.init))
    }

    /// Runs one statement with `binds` for its `?` parameters and returns every row.
    /// - Throws: ``StoreError`` (`duplicate` for a constraint, `unavailable` for a busy, locked, full
    ///   or failing disk) or ``SQLiteFailure`` for anything else.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue] = []) throws -> [SQLRow] {
        guard db != nil else { throw StoreError(.unavailable, detail: "sqlite store closed") }
        var statement = try prepared(sql)
        let pointer = statement.pointer
        defer {
            sqlite_nio_sqlite3_reset(pointer)
            sqlite_nio_sqlite3_clear_bindings(pointer)
        }
        for (index, value) in binds.enumerated() { try check(bind(value, at: Int32(index + 1), to: pointer)) }
        var rows: [SQLRow] = []
        while true {
            let code = sqlite_nio_sqlite3_step(pointer)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw failure(code) }
            let count = sqlite_nio_sqlite3_column_count(pointer)
            if statement.names.count != Int(count) {
                // The schema changed since the statement was prepared (a migration added a column).
                statement.names = (0..<count).map { String(cString: sqlite_nio_sqlite3_column_name(pointer, $0)) }
                statements[sql] = statement
            }
            rows.append(SQLRow(names: statement.names, values: (0..<count).map { column($0, of: pointer) }))
        }
    }

    private func prepared(_ sql: String) throws -> PreparedStatement {
        if let statement = statements[sql] { return statement }
        if statements.count >= Self.cacheLimit {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement.pointer) }
            statements = [:]
        }
        var pointer: OpaquePointer?
        try check(sql.withCString { sqlite_nio_sqlite3_prepare_v3(db, $0, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil) })
        guard let pointer else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "empty statement") }
        let count = sqlite_nio_sqlite3_column_count(pointer)
        let statement = PreparedStatement(
            pointer: pointer, names: (0..<count).map { String(cString: sqlite_nio_sqlite3_column_name(pointer, $0)) })
        statements[sql] = statement
        return statement
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func bind(_ value: SQLValue, at index: Int32, to statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let value): sqlite_nio_sqlite3_bind_int64(statement, index, Int64(value))
        case .float(let value): sqlite_nio_sqlite3_bind_double(statement, index, value)
        case .null: sqlite_nio_sqlite3_bind_null(statement, index)
        case .string(let text):
            text.withCString { sqlite_nio_sqlite3_bind_text(statement, index, $0, Int32(text.utf8.count), Self.transient) }
        case .bytes(let data):
            data.isEmpty
                ? sqlite_nio_sqlite3_bind_zeroblob(statement, index, 0)
                : data.withUnsafeBytes { sqlite_nio_sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
        }
    }

    private func column(_ index: Int32, of statement: OpaquePointer) -> SQLValue {
        switch sqlite_nio_sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(Int(sqlite_nio_sqlite3_column_int64(statement, index)))
        case SQLITE_FLOAT: return .float(sqlite_nio_sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let bytes = sqlite_nio_sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite_nio_sqlite3_column_blob(statement, index) else { return .blob(Data()) }
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw failure(code) }
    }

    /// Classifies by SQLite's result code, never by message text.
    private func failure(_ code: Int32) -> any Error {
        switch code & 0xff {
        case SQLITE_CONSTRAINT: StoreError(.duplicate, detail: "sqlite constraint")
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CANTOPEN, SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_NOMEM:
            StoreError(.unavailable, detail: "sqlite error \(code)")
        default: SQLiteFailure(code: code, message: db.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "")
        }
    }
}

/// A SQLite error that is a defect (SQL or schema), not a transient condition. SQLite's messages
/// name tables and columns, never bound values.
struct SQLiteFailure: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite error \(code): \(message)" }
}

/// Strict column access: a missing column, a NULL where the schema forbids one, or a value of
/// another storage class is ``StoreError`` `corruptRow`, never a default.
extension SQLRow: StoredRow {
    private func value(_ name: String) throws(StoreError) -> SQLValue {
        guard let value = column(name) else { throw StoreError(.corruptRow, detail: "missing column \(name)") }
        return value
    }

    private func corrupt(_ name: String) -> StoreError { StoreError(.corruptRow, detail: "column \(name)") }

    func optionalString(_ name: String) throws(StoreError) -> String? {
        switch try value(name) {
        case .null: return nil
        case .string(let text): return text
        default: throw corrupt(name)
        }
    }

    func optionalData(_ name: String) throws(StoreError) -> Data? {
        switch try value(name) {
        case .null: return nil
        case .bytes(let data): return data
        default: throw corrupt(name)
        }
    }

    func optionalInt(_ name: String) throws(StoreError) -> Int? {
        switch try value(name) {
        case .null: return nil
        case .integer(let value): return value
        default: throw corrupt(name)
        }
    }

    func optionalDate(_ name: String) throws(StoreError) -> Date? {
        switch try value(name) {
        case .null: return nil
        case .float(let seconds): return Date(timeIntervalSince1970: seconds)
        case .integer(let seconds): return Date(timeIntervalSince1970: Double(seconds))
        default: throw corrupt(name)
        }
    }

    func optionalBool(_ name: String) throws(StoreError) -> Bool? {
        try optionalInt(name).map { $0 != 0 }
    }
}
