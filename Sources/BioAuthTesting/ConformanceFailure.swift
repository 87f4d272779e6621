/// A conformance check that did not hold. The message names the check and the statuses seen, never data.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    public let check: String
    public let detail: String
    public init(_ check: String, _ detail: String) {
        self.check = check
        self.detail = detail
    }
    public var description: String { "\(check): \(detail)" }
}

package func require(_ condition: Bool, _ check: String, _ detail: @autoclosure () -> String = "") throws(ConformanceFailure) {
    if !condition { throw ConformanceFailure(check, detail()) }
}
