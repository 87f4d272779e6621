import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation
import Testing

/// Keychain items with access control, one test per rule (Apple's `secd-81-item-acl-stress.m`, SecItem.h and the sources named per test).
struct EmulatedKeychainTests {
    let device = EmulatedDevice.faceID()
    var keychain: EmulatedKeychain { EmulatedKeychain(device: device) }

    /// Adding an ACL item never prompts (secd-81; KeychainAccess #551).
    @Test(arguments: [AccessControlFlags.biometryCurrentSet, .biometryAny, .userPresence, .devicePasscode])
    func addingAnAccessControlledItemNeverPrompts(flags: AccessControlFlags) {
        device.unscriptedAction = .cancel
        #expect(status { try keychain.add(item("a", acl(flags)), data: secret) } == .success)
        #expect(device.promptCount == 0)
    }

    /// Synchronizable + ACL → errSecParam; a later read finds nothing (secd-81; KeychainAccess #53).
    @Test func synchronizableWithAccessControlIsAParameterError() {
        var synced = item("a", acl(.biometryAny))
        synced.synchronizable = true
        #expect(status { try keychain.add(synced, data: secret) } == .errSecParam)
        #expect(status { _ = try keychain.copyData(query("a")) } == .errSecItemNotFound)
    }

    /// `WhenPasscodeSetThisDeviceOnly` with no passcode → errSecAuthFailed (SecItemDb.c ~l.349).
    @Test func passcodeClassItemWithoutPasscodeFailsToAdd() {
        device.removePasscode()
        #expect(status { try keychain.add(item("a", acl(.userPresence)), data: secret) } == .errSecAuthFailed)
        let plain = KeychainItem(service: "test", account: "b", accessibility: .whenPasscodeSetThisDeviceOnly)
        #expect(status { try keychain.add(plain, data: secret) } == .errSecAuthFailed)
    }

    @Test func duplicateAddFails() {
        #expect(status { try keychain.add(item("a"), data: secret) } == .success)
        #expect(status { try keychain.add(item("a"), data: secret) } == .errSecDuplicateItem)
    }

    /// Reading an ACL item with interaction not allowed → errSecInteractionNotAllowed (secd-81).
    @Test func readWithInteractionNotAllowedGivesInteractionNotAllowed() {
        #expect(status { try keychain.add(item("a", acl(.biometryCurrentSet)), data: secret) } == .success)
        let context = device.makeContext()
        context.interactionNotAllowed = true
        #expect(status { _ = try keychain.copyData(query("a", context: context)) } == .errSecInteractionNotAllowed)
        #expect(device.promptCount == 0)
    }

    /// `kSecUseAuthenticationUISkip` → the item is skipped: errSecItemNotFound (secd-81; SecItem.h).
    @Test func readWithUISkipSkipsTheItem() {
        #expect(status { try keychain.add(item("a", acl(.biometryAny)), data: secret) } == .success)
        #expect(status { try keychain.add(item("b"), data: secret) } == .success)
        #expect(status { _ = try keychain.copyData(query("a", ui: .skip)) } == .errSecItemNotFound)
        #expect((try? keychain.copyAttributes(query(nil, ui: .skip)))?.map(\.account) == ["b"])
        #expect(device.promptCount == 0)
    }

    /// Attributes of an access-controlled item need authentication like its data; only the UI-skip
    /// path leaves it out (`SecDbKeychainItem.m`, `ks_decrypt_data`).
    @Test func attributeReadsOfAccessControlledItemsAuthenticate() {
        #expect(status { try keychain.add(item("a", acl(.biometryAny)), data: secret) } == .success)
        #expect(status { try keychain.add(item("b", acl(.biometryAny)), data: secret) } == .success)
        #expect(status { try keychain.add(item("c"), data: secret) } == .success)
        let context = device.makeContext()
        context.interactionNotAllowed = true
        #expect(status { _ = try keychain.copyAttributes(query(nil, context: context)) } == .errSecInteractionNotAllowed)
        #expect(device.promptCount == 0)
        device.script(.cancel)
        #expect(status { _ = try keychain.copyAttributes(query(nil)) } == .errSecUserCanceled)
        #expect(device.promptCount == 1)
        let listed = try? keychain.copyAttributes(query(nil))
        #expect(listed?.map(\.account) == ["a", "b", "c"])
        #expect(device.promptCount == 2, "one prompt, then the query's context reads the other item")
        #expect((try? keychain.copyAttributes(query(nil, ui: .skip)))?.map(\.account) == ["c"])
        #expect(device.promptCount == 2)
    }

    /// An already-authenticated context reads without UI; an unauthenticated read prompts once.
    @Test func readPromptsOnceAndAuthenticatedContextReadsSilently() async {
        #expect(status { try keychain.add(item("a", acl(.biometryCurrentSet)), data: secret) } == .success)
        #expect((try? keychain.copyData(query("a"))) == secret)
        #expect(device.promptCount == 1)
        #expect(device.prompts.last?.source == .keychain)
        let context = device.makeContext()
        #expect(await evaluate(context) == nil)
        #expect((try? keychain.copyData(query("a", context: context))) == secret)
        #expect(device.promptCount == 2)
    }

    /// User cancel → -128; failed match, lockout, system cancel, fallback → errSecAuthFailed (SecItem.m; bitwarden PR #783).
    @Test(arguments: [
        ([EmulatedDevice.PromptAction.cancel], SecStatus.errSecUserCanceled),
        ([.noMatch, .noMatch, .noMatch], .errSecAuthFailed),
        ([.systemCancel], .errSecAuthFailed),
        ([.noMatch, .noMatch, .fallback], .errSecAuthFailed),
    ])
    func failedReadsMapLAErrorsToStatuses(actions: [EmulatedDevice.PromptAction], expected: SecStatus) {
        #expect(status { try keychain.add(item("a", acl(.biometryAny)), data: secret) } == .success)
        for action in actions { device.script(action) }
        #expect(status { _ = try keychain.copyData(query("a")) } == expected)
    }

    @Test func lockedOutReadGivesAuthFailed() {
        #expect(status { try keychain.add(item("a", acl(.biometryAny)), data: secret) } == .success)
        device.lockOutBiometry()
        #expect(status { _ = try keychain.copyData(query("a")) } == .errSecAuthFailed)
        #expect(device.promptCount == 0)
    }

    /// Delete needs no authentication (SecAccessControl.m: delete always allowed).
    @Test func deleteNeedsNoAuthentication() {
        device.unscriptedAction = .cancel
        #expect(status { try keychain.add(item("a", acl(.biometryCurrentSet)), data: secret) } == .success)
        #expect(status { try keychain.delete(query("a")) } == .success)
        #expect(device.promptCount == 0)
        #expect(status { try keychain.delete(query("a")) } == .errSecItemNotFound)
    }

    /// Updating an ACL item prompts (Valet `SecureEnclave.swift`: "would cause iOS to prompt").
    @Test func updatingAnAccessControlledItemPrompts() {
        #expect(status { try keychain.add(item("a", acl(.biometryAny)), data: secret) } == .success)
        device.script(.cancel)
        #expect(status { try keychain.update(query("a"), data: SecretBytes([1])) } == .errSecUserCanceled)
        #expect(device.promptCount == 1)
        #expect(status { try keychain.update(query("a"), data: SecretBytes([1])) } == .success)
        #expect((try? keychain.copyData(query("a"))) == SecretBytes([1]))
    }

    /// Removing the passcode deletes every `WhenPasscodeSetThisDeviceOnly` item (SecItem.h).
    @Test func removingThePasscodeDeletesPasscodeClassItems() {
        #expect(status { try keychain.add(item("protected", acl(.biometryAny)), data: secret) } == .success)
        #expect(status { try keychain.add(item("plain"), data: secret) } == .success)
        device.removePasscode()
        #expect(status { _ = try keychain.copyData(query("protected")) } == .errSecItemNotFound)
        #expect((try? keychain.copyData(query("plain"))) == secret)
    }

    /// After an enrollment change `.biometryCurrentSet` items are unreadable (SecAccessControl.h);
    /// `.biometryAny` and `.userPresence` items survive.
    @Test(arguments: [
        (EmulatedDevice.InvalidatedRead.itemNotFound, SecStatus.errSecItemNotFound), (.authenticationFailed, .errSecAuthFailed),
    ])
    func enrollmentChangeInvalidatesOnlyCurrentSetItems(read: EmulatedDevice.InvalidatedRead, configured: SecStatus) {
        let device = EmulatedDevice.faceID { $0.invalidatedRead = read }
        let keychain = EmulatedKeychain(device: device)
        #expect(status { try keychain.add(item("current", acl(.biometryCurrentSet)), data: secret) } == .success)
        #expect(status { try keychain.add(item("any", acl(.biometryAny)), data: secret) } == .success)
        #expect(status { try keychain.add(item("presence", acl(.userPresence)), data: secret) } == .success)
        device.enrollBiometry()
        #expect(status { _ = try keychain.copyData(query("current")) } == configured)
        #expect((try? keychain.copyData(query("any"))) == secret)
        #expect((try? keychain.copyData(query("presence"))) == secret)
        device.removeBiometry(device.enrolledIdentities.last)  // back to the original set: still invalid
        #expect(status { _ = try keychain.copyData(query("current")) } == configured)
    }

    /// `.devicePasscode` items need the passcode, not biometry.
    @Test func devicePasscodeItemNeedsThePasscode() {
        #expect(status { try keychain.add(item("a", acl(.devicePasscode)), data: secret) } == .success)
        device.script(.passcode("123456"))
        #expect((try? keychain.copyData(query("a"))) == secret)
        #expect(device.prompts.last?.policy == .deviceOwnerAuthentication)
    }

    /// UNCONFIRMED behaviour is configurable: a bio ACL add with nothing enrolled.
    @Test func bioACLAddWithoutEnrollmentIsConfigurable() {
        let strict = EmulatedDevice(configuration: .init(biometricItemsNeedEnrollment: true), enrolled: false)
        #expect(status { try EmulatedKeychain(device: strict).add(item("a", acl(.biometryAny)), data: secret) } == .errSecAuthFailed)
        let lenient = EmulatedDevice(configuration: .init(), enrolled: false)
        #expect(status { try EmulatedKeychain(device: lenient).add(item("a", acl(.biometryAny)), data: secret) } == .success)
    }

    /// A jailbreak dump recovers only items without access control.
    @Test func keychainDumpRecoversOnlyUnprotectedItems() {
        #expect(status { try keychain.add(item("protected", acl(.biometryCurrentSet)), data: secret) } == .success)
        #expect(status { try keychain.add(item("plain"), data: SecretBytes([7])) } == .success)
        #expect(device.dumpKeychain().map(\.account) == ["plain"])
    }
}

/// `SecAccessControlCreateWithFlags` validation (`OSX/sec/Security/SecAccessControl.m` l.150–275).
struct AccessControlTests {
    @Test(arguments: [
        AccessControlFlags([.or, .and, .biometryAny, .devicePasscode]),
        [.biometryAny, .biometryCurrentSet],
        [.userPresence, .biometryAny],
        [.userPresence, .devicePasscode],
    ])
    func invalidCombinationsAreParameterErrors(flags: AccessControlFlags) {
        #expect(throws: SecStatus.errSecParam) { try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: flags) }
    }

    @Test(arguments: [
        AccessControlFlags([.userPresence, .privateKeyUsage]), [.userPresence, .applicationPassword],
        [.biometryCurrentSet, .devicePasscode, .or], [.biometryAny, .devicePasscode], [], [.privateKeyUsage],
    ])
    func validCombinationsAreAccepted(flags: AccessControlFlags) throws {
        let access = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: flags)
        #expect(access.flags == flags)
    }

    @Test func twoConstraintsCombineWithAndUnlessOr() throws {
        let and = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.biometryAny, .devicePasscode])
        #expect(!and.isSatisfied(biometry: true, passcode: false))
        #expect(and.isSatisfied(biometry: true, passcode: true))
        let or = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.biometryAny, .devicePasscode, .or])
        #expect(or.isSatisfied(biometry: false, passcode: true))
    }

    @Test func privateKeyUsageMovesTheConstraintFromReadToKeyOperations() throws {
        let item = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: .biometryAny)
        #expect(item.guardsItemRead && !item.guardsKeyOperations)
        let key = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.biometryAny, .privateKeyUsage])
        #expect(!key.guardsItemRead && key.guardsKeyOperations)
        #expect(!item.permitsKeyOperations)
    }

    @Test func decodingRevalidates() {
        let json = Data(#"{"accessibility":"akpu","flags":10}"#.utf8)  // biometryAny | biometryCurrentSet
        #expect(throws: SecStatus.errSecParam) { try JSONDecoder().decode(AccessControl.self, from: json) }
    }
}
