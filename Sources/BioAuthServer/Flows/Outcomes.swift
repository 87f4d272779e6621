import Foundation

/// What each outcome of a request writes, decided once for every store: the rows a login, a
/// counted failure, an enrolment or a step-up approval adds, what each withdraws, and the audit
/// events that go with them (``WritePlan/audit(_:)`` adds the outbox rows).
extension WritePlan {
    /// A login: a stronger password hash computed at this login if given, the session (a device
    /// session marks its device used), the failure counters the login clears, the audit event.
    package static func login(
        _ session: SessionRecord, from client: String? = nil, clearing: [FailureSubject] = [], rehashed: UserRecord? = nil,
        audit: AuditEvent
    ) -> WritePlan {
        var plan = WritePlan()
        if let rehashed { plan.add(.replacePassword(rehashed)) }
        plan.add(.insertSession(session, touchingDevice: session.kind == .device ? session.deviceID : nil))
        if !clearing.isEmpty { plan.add(.clearFailures(clearing)) }
        if let client { plan.add(.rememberClient(userID: session.userID, client: client, at: session.createdAt)) }
        plan.audit(audit)
        return plan
    }

    /// A failure: counted against each of its subjects, audited with a lockout event for each
    /// subject that reaches its limit (``FailureRecord/consequences(ofCounts:)``).
    package static func failure(_ failure: FailureRecord) -> WritePlan {
        var plan = WritePlan()
        plan.add(.countFailure(failure))
        return plan
    }

    /// Nothing but these audit events (a refused attempt).
    package static func events(_ events: [AuditEvent]) -> WritePlan {
        var plan = WritePlan()
        for event in events { plan.audit(event) }
        return plan
    }

    /// A new challenge, stored unless a failure limit of the sending address is reached. There is
    /// no per-device or per-user quota: whoever knows a user and device id (both are in every
    /// access token) could fill it and stop the owner's logins. Requests per address are bounded
    /// by the request limiter instead.
    package static func issueChallenge(_ challenge: ChallengeRecord, lockout: LockoutQuery) -> WritePlan {
        var plan = WritePlan()
        plan.require(.belowFailureLimits(lockout))
        plan.add(.insertChallenge(challenge))
        return plan
    }

    /// A verified enrolment. A new device is inserted. A re-enrolment (`replacing` says how it was
    /// allowed) needs the device still active and the user's: its key is replaced, the time and
    /// the way recorded (its cool-down starts again, ``DeviceRecord/keySince``), and what the old key opened or signed is
    /// withdrawn (``replacedKey(deviceID:userID:at:)``). An enrolment through an approved request
    /// uses the request up; a request that is gone or no longer approved refuses the whole plan.
    /// An enrolment `asFirstDevice` (one that went without a proof because the user had no device)
    /// is refused if the user has, or ever had, a device when it finishes: the rule is decided in
    /// the finishing transaction, not when the challenge was issued.
    package static func enrolment(
        _ device: DeviceRecord, replacing: EnrolmentProof?, approvedRequest: EnrolmentRequestID?, asFirstDevice: Bool = false,
        audit: AuditEvent
    ) -> WritePlan {
        var plan = WritePlan()
        if asFirstDevice { plan.require(.noDeviceEver(userID: device.userID)) }
        if let approvedRequest {
            plan.require(.approvedEnrolmentRequest(id: approvedRequest))
            plan.add(.deleteEnrolmentRequest(id: approvedRequest))
        }
        if let replacing {
            plan.require(.activeDevice(id: device.id, userID: device.userID))
            plan.add(
                .replaceDeviceKey(
                    id: device.id, publicKey: device.publicKey, attestation: device.credential.attestation, at: device.createdAt,
                    how: replacing,
                    dpopThumbprint: device.dpopThumbprint))
            plan.merge(.replacedKey(deviceID: device.id, userID: device.userID, at: device.createdAt))
        } else {
            plan.add(.insertDevice(device))
        }
        plan.audit(audit)
        return plan
    }

    /// A verified step-up: the one-time approval and the audit event. (Like a device login, it
    /// clears no failure counter.)
    package static func approval(_ approval: ApprovalRecord, audit: AuditEvent) -> WritePlan {
        inserting(.insertApproval(approval), audit: audit)
    }

    /// A new user (the demo primary login).
    /// A new password account, for an id nobody owns yet: not one the app's backend vouched for,
    /// nor one with devices (``Guard/userIDFree(userID:)``).
    package static func createUser(_ user: UserRecord, audit: AuditEvent) -> WritePlan {
        var plan = inserting(.insertUser(user), audit: audit)
        plan.guards.insert(.userIDFree(userID: user.id), at: 0)
        return plan
    }

    /// A session the app's backend vouched for (an enrolment grant, a ``PrimaryAuthenticator``
    /// login): its user id becomes the backend's for good — unless a password account has it,
    /// which refuses (``Guard/noPasswordAccount(userID:)``). The two namespaces never overlap.
    package static func backendLogin(_ session: SessionRecord, from client: String? = nil, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.noPasswordAccount(userID: session.userID))
        plan.add(.claimForBackend(userID: session.userID, at: session.createdAt))
        plan.merge(.login(session, from: client, audit: audit))
        return plan
    }

    /// A new backend API key.
    package static func createApiKey(_ key: ApiKeyRecord, audit: AuditEvent) -> WritePlan { inserting(.insertApiKey(key), audit: audit) }

    /// A new access-token signing key.
    package static func addSigningKey(_ key: SigningKeyRecord, audit: AuditEvent) -> WritePlan {
        inserting(.insertSigningKey(key), audit: audit)
    }
    /// Retires signing keys: deleted, so no instance signs with or publishes them after its next reload.
    package static func retireSigningKeys(_ ids: [String], audit: [AuditEvent]) -> WritePlan {
        var plan = WritePlan()
        for id in ids { plan.add(.deleteSigningKey(id: id)) }
        for event in audit { plan.audit(event) }
        return plan
    }

    /// One row inserted and audited.
    private static func inserting(_ insert: Mutation, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.add(insert)
        plan.audit(audit)
        return plan
    }
}

extension FailureRecord {
    /// What a counted failure adds once its new counts are known, inside the counting
    /// transaction: its audit event, and a `lockout` event for each subject that just reached its
    /// limit (or reached it earlier, ``reachedEarlier``) — those subjects are `locked`.
    public func consequences(ofCounts counts: [FailureSubject: Int]) -> (locked: [FailureSubject], plan: WritePlan) {
        let locked = subjects.filter { counts[$0] == limits[$0] } + reachedEarlier
        var plan = WritePlan()
        plan.audit(audit)
        for subject in locked { plan.audit(lockoutEvent(subject)) }
        return (locked, plan.publishing(published))
    }
}
