import BioAuthServer
import Foundation

/// A statement written once for both stores: SQL text with its values in place, rendered for a
/// ``SQLDialect`` only when a driver runs it. Interpolated values become parameters, never text;
/// only ``StringInterpolation/appendInterpolation(trusted:)`` inserts text, for fixed fragments
/// such as ``Schema/mergedAuditKindsCondition``.
///
/// ```swift
/// let revoke: SQL = "UPDATE devices SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL"
/// ```
package struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// A parameter's value, typed as ``Schema/ColumnType`` stores it; nil is NULL.
    package enum Value: Sendable, Hashable {
        case text(String?)
        case bytes(Data?)
        case integer(Int?)
        case date(Date?)
        case boolean(Bool?)
        /// A list of texts, for ``StringInterpolation/appendInterpolation(oneOf:)`` in a dialect
        /// that binds arrays.
        case texts([String])
    }

    package enum Fragment: Sendable, Hashable {
        case text(String)
        case value(Value)
        /// `IN (…)` over the texts, or `= ANY(…)` with one array parameter.
        case oneOf([String])
        /// `IS` (SQLite) or `IS NOT DISTINCT FROM` (PostgreSQL): equality that holds for two NULLs.
        case isNotDistinctFrom
        /// Locks the rows a `SELECT` reads (those of one table alias, or all) until the transaction
        /// ends, where the dialect has row locks.
        case forUpdate(of: String?)
        /// Locks the rows a `SELECT` reads, skipping rows another transaction holds (a queue's claim).
        case forUpdateSkipLocked
    }

    package private(set) var fragments: [Fragment]

    package init(stringLiteral value: String) { fragments = [.text(value)] }
    package init(stringInterpolation: StringInterpolation) { fragments = stringInterpolation.fragments }

    package struct StringInterpolation: StringInterpolationProtocol {
        var fragments: [Fragment] = []

        package init(literalCapacity: Int, interpolationCount: Int) { fragments.reserveCapacity(2 * interpolationCount + 1) }

        package mutating func appendLiteral(_ literal: String) { fragments.append(.text(literal)) }
        package mutating func appendInterpolation(_ value: String?) { fragments.append(.value(.text(value))) }
        package mutating func appendInterpolation<Record>(_ id: RecordID<Record>?) { fragments.append(.value(.text(id?.rawValue))) }
        package mutating func appendInterpolation(_ kind: AuditKind) { fragments.append(.value(.text(kind.description))) }
        package mutating func appendInterpolation(_ reason: AuditReason?) { fragments.append(.value(.text(reason?.description))) }
        package mutating func appendInterpolation(_ id: BioAuthRequestID?) { fragments.append(.value(.text(id?.rawValue))) }
        package mutating func appendInterpolation(_ value: Data?) { fragments.append(.value(.bytes(value))) }
        package mutating func appendInterpolation(_ id: ChallengeID?) { fragments.append(.value(.bytes(id?.bytes))) }
        package mutating func appendInterpolation(_ hash: TokenHash?) { fragments.append(.value(.bytes(hash?.digest))) }
        package mutating func appendInterpolation(_ value: Int?) { fragments.append(.value(.integer(value))) }
        package mutating func appendInterpolation(_ value: Date?) { fragments.append(.value(.date(value))) }
        package mutating func appendInterpolation(_ value: Bool?) { fragments.append(.value(.boolean(value))) }
        /// `column \(oneOf: keys)`: the column equals one of the texts.
        package mutating func appendInterpolation(oneOf texts: [String]) { fragments.append(.oneOf(texts)) }
        /// Text that is part of the statement, not a value: fixed names only, never input.
        package mutating func appendInterpolation(trusted text: String) { fragments.append(.text(text)) }
        package mutating func appendInterpolation(_ marker: Marker) {
            switch marker {
            case .isNotDistinctFrom: fragments.append(.isNotDistinctFrom)
            case .forUpdate: fragments.append(.forUpdate(of: nil))
            case .forUpdateOf(let alias): fragments.append(.forUpdate(of: alias))
            case .forUpdateSkipLocked: fragments.append(.forUpdateSkipLocked)
            }
        }
        /// Another statement's fragments, in place (a subquery, a shared condition).
        package mutating func appendInterpolation(_ sql: SQL) { fragments += sql.fragments }
    }

    /// The dialect-dependent words a statement may contain.
    package enum Marker: Sendable {
        case isNotDistinctFrom, forUpdate, forUpdateSkipLocked
        /// `FOR UPDATE OF alias`: in a join, lock only that table's rows.
        case forUpdateOf(String)
    }

    /// The statement's text with `?` for each value: its values (token and password hashes among
    /// them) never reach a description, a log line or an error.
    package var description: String { rendered(in: .sqlite).text }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["text": description]) }

    /// The statement in `dialect`'s text, and its parameters in order.
    package func rendered(in dialect: SQLDialect) -> (text: String, values: [Value]) {
        var text = "", values: [Value] = []
        func parameter(_ value: Value) -> String {
            values.append(value)
            return dialect.numberedParameters ? "$\(values.count)" : "?"
        }
        for fragment in fragments {
            switch fragment {
            case .text(let part): text += part
            case .value(let value): text += parameter(value)
            case .oneOf(let texts) where dialect.bindsArrays: text += "= ANY(" + parameter(.texts(texts)) + ")"
            case .oneOf(let texts): text += "IN (" + texts.map { parameter(.text($0)) }.joined(separator: ", ") + ")"
            case .isNotDistinctFrom: text += dialect.nullSafeEquality
            case .forUpdate(let alias):
                guard dialect.rowLocks else { break }
                text += " FOR UPDATE" + (alias.map { " OF " + $0 } ?? "")
            case .forUpdateSkipLocked: text += dialect.rowLocks ? " FOR UPDATE SKIP LOCKED" : ""
            }
        }
        return (text, values)
    }
}

/// What differs between the databases the stores run on, for the statements written once (``SQL``).
package struct SQLDialect: Sendable, Hashable {
    /// `$1, $2, …` instead of `?`.
    package var numberedParameters: Bool
    /// A list parameter binds as one array (`= ANY($1)`) instead of one parameter per element.
    package var bindsArrays: Bool
    /// The operator for equality that holds for two NULLs.
    package var nullSafeEquality: String
    /// `SELECT … FOR UPDATE` locks rows; without it, the store serialises writers another way.
    package var rowLocks: Bool
    /// A `WITH` clause may write (`WITH t AS (UPDATE …) INSERT …`): two writes, one statement.
    package var writingCommonTableExpressions: Bool
    /// The type each kind of column is declared with (``SchemaChange``). A generated row number
    /// exists only in tables the released migrations created.
    package var columnTypes: [Schema.ColumnType: String]

    /// SQLite: one writer at a time, so no row locks are needed.
    package static let sqlite = SQLDialect(
        numberedParameters: false, bindsArrays: false, nullSafeEquality: "IS", rowLocks: false, writingCommonTableExpressions: false,
        columnTypes: [
            .text: "TEXT", .bytes: "BLOB", .date: "REAL", .integer: "INTEGER", .smallInteger: "INTEGER", .boolean: "INTEGER",
            .serial: "INTEGER",
        ])

    package static let postgres = SQLDialect(
        numberedParameters: true, bindsArrays: true, nullSafeEquality: "IS NOT DISTINCT FROM", rowLocks: true,
        writingCommonTableExpressions: true,
        columnTypes: [
            .text: "TEXT", .bytes: "BYTEA", .date: "TIMESTAMPTZ", .integer: "INTEGER", .smallInteger: "SMALLINT", .boolean: "BOOLEAN",
            .serial: "BIGINT",
        ])
}
