import BioAuthServer

/// Test code may write a record id as a literal (`"alice"` for a `UserID`). Only test code
/// imports this module: in the server's own modules an id is always made on purpose, so an empty
/// `""` stand-in for a missing id does not compile.
extension RecordID: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}
