import BioAuthCore
import Foundation

/// Detects a change of the enrolled biometry by comparing the context's domain state with a
/// baseline stored after the app passcode last succeeded.
///
/// A mismatch never destroys data: the domain state can also change across major OS updates
/// (`LAContext.h`; Apple forums thread 802782). The caller asks for the app passcode and then
/// calls ``rebaseline(from:)``.
package struct EnrollmentGuard: Sendable {
    package enum Result: Sendable, Hashable {
        /// The enrolled biometry is the one the baseline recorded.
        case unchanged
        /// The enrolled biometry changed (or the OS changed the value): require the app passcode.
        case changed
        /// No baseline is stored yet.
        case noBaseline
        /// The context has no domain state (no biometric success on it).
        case unknown
    }

    private let records: PlainRecords
    private static let account = "bioauth.enrollment-baseline"

    package init(keychain: any KeychainService, service: String) {
        records = PlainRecords(keychain: keychain, service: service)
    }

    /// Compares the domain state of an evaluated context with the baseline.
    package func check(_ context: any AuthenticationContext) throws(BioAuthError) -> Result {
        guard let baseline = try records.read(Self.account) else { return .noBaseline }
        guard let current = context.evaluatedPolicyDomainState else { return .unknown }
        return baseline == SecretBytes(current) ? .unchanged : .changed
    }

    /// Stores the context's domain state as the new baseline.
    ///
    /// - Throws: ``BioAuthError`` `biometryNotAvailable` when the context has no domain state.
    package func rebaseline(from context: any AuthenticationContext) throws(BioAuthError) {
        guard let state = context.evaluatedPolicyDomainState else { throw BioAuthError(.biometryNotAvailable) }
        try records.write(SecretBytes(state), Self.account)
    }

    /// Forgets the baseline.
    package func clear() throws(BioAuthError) { try records.remove(Self.account) }
}
