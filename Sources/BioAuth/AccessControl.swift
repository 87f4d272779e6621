import Foundation

/// A validated `SecAccessControl`: an accessibility class plus flags.
///
/// ``init(accessibility:flags:)`` applies the rules of `SecAccessControlCreateWithFlags`
/// (apple-oss-distributions/Security `OSX/sec/Security/SecAccessControl.m` l.150–275), so an invalid
/// combination fails here on every platform, not only on a device.
package struct AccessControl: Sendable, Hashable, Codable {
    package let accessibility: KeychainAccessibility
    package let flags: AccessControlFlags

    /// - Throws: ``SecStatus/errSecParam`` when `.or` and `.and` are both set, when both bio
    ///   flags are set, or when `.userPresence` is combined with another constraint.
    package init(accessibility: KeychainAccessibility, flags: AccessControlFlags) throws(SecStatus) {
        if flags.contains(.or) && flags.contains(.and) { throw .errSecParam }  // "only one logical operation can be set"
        // "only one bio constraint can be set"
        if flags.contains(.biometryAny) && flags.contains(.biometryCurrentSet) { throw .errSecParam }
        if flags.contains(.userPresence) {
            let allowed: AccessControlFlags = [.userPresence, .applicationPassword, .privateKeyUsage]
            guard flags.subtracting(allowed).isEmpty else { throw .errSecParam }
        }
        self.accessibility = accessibility
        self.flags = flags
    }

    private enum CodingKeys: String, CodingKey { case accessibility, flags }

    /// Decodes and re-validates, so a stored ACL can never hold a combination Apple rejects.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let accessibility = try container.decode(KeychainAccessibility.self, forKey: .accessibility)
        let flags = try container.decode(AccessControlFlags.self, forKey: .flags)
        try self.init(accessibility: accessibility, flags: flags)
    }

    /// The user-authentication constraints (bio, passcode, presence, companion).
    package var constraints: AccessControlFlags { flags.intersection(AccessControlFlags.constraintFlags) }

    /// Without `.privateKeyUsage`, constraints guard decrypt: reading an item's data.
    package var guardsItemRead: Bool { !constraints.isEmpty && !flags.contains(.privateKeyUsage) }

    /// With `.privateKeyUsage`, constraints guard sign, compute-key (ECIES decrypt) and KEM decapsulate.
    package var guardsKeyOperations: Bool { !constraints.isEmpty && flags.contains(.privateKeyUsage) }

    /// Whether an SE private key may be used at all: with constraints but no `.privateKeyUsage`
    /// the key operations are not in the ACL (LAError -1009 "ACL operation is not allowed: 'ock'").
    package var permitsKeyOperations: Bool { constraints.isEmpty || flags.contains(.privateKeyUsage) }

    /// Whether the ACL depends on the enrolled biometric set.
    package var isBoundToCurrentBiometrySet: Bool { flags.contains(.biometryCurrentSet) }

    /// Whether the constraints are met by what a context has proven. Two or more constraints
    /// combine with AND unless `.or` is set (k-of-n in `SecAccessControl.m`).
    package func isSatisfied(biometry: Bool, passcode: Bool) -> Bool {
        let results = constraintList.map { constraint -> Bool in
            switch constraint {
            case .userPresence: biometry || passcode
            case .biometryAny, .biometryCurrentSet: biometry
            case .devicePasscode: passcode
            default: false  // companion: not emulated
            }
        }
        guard !results.isEmpty else { return true }
        return flags.contains(.or) ? results.contains(true) : !results.contains(false)
    }

    /// The policy a prompt for this ACL evaluates: biometrics only when no constraint accepts the passcode.
    package var promptPolicy: AuthenticationPolicy {
        let acceptsPasscode = constraints.contains(.userPresence) || constraints.contains(.devicePasscode)
        return acceptsPasscode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
    }

    private var constraintList: [AccessControlFlags] {
        [.userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .companion].filter { constraints.contains($0) }
    }
}
