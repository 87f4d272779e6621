import Foundation

/// A change to the schema written once and rendered for each dialect: the migrations after the
/// stores' released histories (``Schema/sharedMigrations``). A new column is one line in
/// ``Schema/tables``, one ``SchemaMigration`` here, and the statements that use it.
package enum SchemaChange: Sendable, Hashable {
    /// A new column, its name in lower case (PostgreSQL folds unquoted names). A required one
    /// needs `default`, the value the rows that exist get.
    case addColumn(table: String, Schema.Column, default: ColumnDefault?)
    /// An index, partial when `where` is given (a condition both dialects read the same way).
    case createIndex(name: String, table: String, columns: [String], where: String?)
    /// A new table with these columns, the first its primary key.
    case createTable(Schema.Table)

    /// A nullable column, or a required one with the default the existing rows get.
    package static func addColumn(_ table: String, _ column: Schema.Column, default value: ColumnDefault? = nil) -> SchemaChange {
        .addColumn(table: table, column, default: value)
    }

    /// The statement for `dialect`.
    package func statement(in dialect: SQLDialect) -> String {
        switch self {
        case .addColumn(let table, let column, let value):
            let required = column.nullable ? "" : " NOT NULL"
            let initial = value.map { " DEFAULT \($0.literal(in: dialect))" } ?? ""
            return "ALTER TABLE \(table) ADD COLUMN \(column.name) \(dialect.columnTypes[column.type] ?? "TEXT")\(required)\(initial)"
        case .createTable(let table):
            let columns = table.columns.enumerated().map { index, column in
                let type = dialect.columnTypes[column.type] ?? "TEXT"
                return "\(column.name) \(type)" + (index == 0 ? " PRIMARY KEY" : column.nullable ? "" : " NOT NULL")
            }
            return "CREATE TABLE \(table.name) (\(columns.joined(separator: ", ")))"
        case .createIndex(let name, let table, let columns, let condition):
            let partial = condition.map { " WHERE \($0)" } ?? ""
            return "CREATE INDEX \(name) ON \(table) (\(columns.joined(separator: ", ")))\(partial)"
        }
    }
}

/// One migration written once for both stores: its name (recorded by each database) and its changes.
package struct SchemaMigration: Sendable, Hashable {
    package var name: String
    package var changes: [SchemaChange]

    package init(_ name: String, _ changes: [SchemaChange]) {
        self.name = name
        self.changes = changes
    }

    /// The statements for `dialect`, in order.
    package func statements(in dialect: SQLDialect) -> [String] { changes.map { $0.statement(in: dialect) } }
}

/// The value a required new column gives the rows that exist.
package enum ColumnDefault: Sendable, Hashable {
    case integer(Int)
    case text(String)
    case boolean(Bool)

    /// The literal in `dialect` (SQLite keeps a boolean as an integer).
    package func literal(in dialect: SQLDialect) -> String {
        switch self {
        case .integer(let value): "\(value)"
        case .text(let value): "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .boolean(let value): dialect.columnTypes[.boolean] == "BOOLEAN" ? (value ? "TRUE" : "FALSE") : (value ? "1" : "0")
        }
    }
}
