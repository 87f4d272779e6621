import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// Who a user id belongs to, and a user's first device.
extension StoreConformance {
    /// User-id namespaces: an id the backend claimed, or with a device, cannot become a password
    /// account; a password account's id cannot be claimed; of parallel sign-ups and claims of one
    /// id exactly one kind lands (a per-id lock).
    public func userIDNamespaces(_ store: any BioAuthStore) async throws {
        func signUp(_ id: UserID) async throws -> PlanOutcome {
            try await store.apply(
                .createUser(
                    UserRecord(id: id, passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2]), createdAt: t0),
                    audit: event("user.created")))
        }
        func signedUp(_ id: UserID) async throws -> Bool {
            do { return try await signUp(id).wasApplied } catch let error as StoreError where error.code == .duplicate { return false }
        }
        func claim(_ id: UserID) async throws -> PlanOutcome {
            let session = SessionRecord(
                id: SessionID("g-" + id.rawValue + UUID().uuidString), tokenHash: TokenHash(digest: Data(UUID().uuidString.utf8)),
                userID: id, deviceID: nil,
                kind: .enrolmentGrant, createdAt: t0, expiresAt: t0.addingTimeInterval(600))
            return try await store.apply(.backendLogin(session, audit: event("enrolment.grant.issued", user: id)))
        }
        try require(try await claim("carol").wasApplied, "namespaces: the backend claims a free id")
        try require(try await claim("carol").wasApplied, "namespaces: and again")
        try require(try await signUp("carol") == .refused(.userIDFree(userID: "carol")), "namespaces: a claimed id is not signed up")
        try require(try await store.passwordLoginState(username: "carol", lockout: lockout()).user == nil, "namespaces: nothing written")
        try await enrol(store, DeviceRecord(id: "h1", userID: "hank", name: "Phone", publicKey: Data([4]), createdAt: t0))
        try require(try await signUp("hank") == .refused(.userIDFree(userID: "hank")), "namespaces: an id with a device is not signed up")
        try require(try await signUp("dave").wasApplied, "namespaces: a free id is signed up")
        try require(
            try await claim("dave") == .refused(.noPasswordAccount(userID: "dave")), "namespaces: a password account is not claimed")
        let landed = try await withThrowingTaskGroup(of: String?.self) { group in
            for n in 0..<8 {
                group.addTask {
                    n % 2 == 0 ? (try await signedUp("ivy") ? "password" : nil) : (try await claim("ivy").wasApplied ? "backend" : nil)
                }
            }
            return try await group.reduce(into: Set<String>()) { if let kind = $1 { $0.insert(kind) } }
        }
        try require(landed.count == 1, "namespaces: one kind owns a raced id", "\(landed)")
    }

    /// The first-device rule is a guard evaluated in the finishing transaction under a per-user
    /// lock: of parallel first enrolments exactly one lands, another user's never interferes, and
    /// a revoked device still counts (revoking every device does not make the next one first).
    public func firstDevice(_ store: any BioAuthStore) async throws {
        func first(_ id: DeviceID, user: UserID) -> WritePlan {
            let device = DeviceRecord(id: id, userID: user, name: "Phone", publicKey: Data(id.rawValue.utf8), createdAt: t0)
            return .enrolment(
                device, replacing: nil, approvedRequest: nil, asFirstDevice: true, audit: event("device.enrolled", user: user, device: id))
        }
        let landed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<8 { group.addTask { try await store.apply(first(DeviceID("erin-\(n)"), user: "erin")).wasApplied } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(landed == 1, "first device: one of eight parallel enrolments", "\(landed) landed")
        try require(try await store.devices(userID: "erin").count == 1, "first device: nothing written for the others")
        try require(try await store.apply(first("frank-1", user: "frank")).wasApplied, "first device: another user's is their own")
        _ = try await store.apply(.revokeDevice(id: "frank-1", userID: "frank", at: t0, audit: event("device.revoked", user: "frank")))
        let refused = try await store.apply(first("frank-2", user: "frank"))
        try require(refused.refusal == .noDeviceEver(userID: "frank"), "first device: a revoked device still counts")
    }
}
