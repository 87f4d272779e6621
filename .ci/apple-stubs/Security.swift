// Security (keychain items, access control, SecKey) as far as `BioAuthApple` and its macOS tests use
// it, written from https://developer.apple.com/documentation/security and the public headers of
// apple-oss-distributions/Security (`keychain/headers/SecItem.h`, `SecKey.h`, `SecAccessControl.h`,
// `base/SecBase.h`) — each declaration with its page. Every declaration here exists on every
// platform the package declares (iOS, macOS, visionOS, watchOS, tvOS).
@_exported import AppleStubBase

// The constants are read-only globals whose values are their names: only their types matter to a
// type-check (C globals of the SDK import as concurrency-safe, which a computed `var` is too).

// MARK: Item class and attribute keys — https://developer.apple.com/documentation/security/item-class-keys-and-values

/// https://developer.apple.com/documentation/security/ksecclass
public var kSecClass: CFString { "kSecClass" }
/// https://developer.apple.com/documentation/security/ksecclassgenericpassword
public var kSecClassGenericPassword: CFString { "kSecClassGenericPassword" }
/// https://developer.apple.com/documentation/security/ksecclasskey
public var kSecClassKey: CFString { "kSecClassKey" }
/// https://developer.apple.com/documentation/security/ksecattrservice
public var kSecAttrService: CFString { "kSecAttrService" }
/// https://developer.apple.com/documentation/security/ksecattraccount
public var kSecAttrAccount: CFString { "kSecAttrAccount" }
/// https://developer.apple.com/documentation/security/ksecattrsynchronizable
public var kSecAttrSynchronizable: CFString { "kSecAttrSynchronizable" }
/// https://developer.apple.com/documentation/security/ksecattraccesscontrol
public var kSecAttrAccessControl: CFString { "kSecAttrAccessControl" }
/// https://developer.apple.com/documentation/security/ksecattraccessible
public var kSecAttrAccessible: CFString { "kSecAttrAccessible" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenpasscodesetthisdeviceonly
public var kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString { "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlockedthisdeviceonly
public var kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString { "kSecAttrAccessibleWhenUnlockedThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlockthisdeviceonly
public var kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString { "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlocked
public var kSecAttrAccessibleWhenUnlocked: CFString { "kSecAttrAccessibleWhenUnlocked" }
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlock
public var kSecAttrAccessibleAfterFirstUnlock: CFString { "kSecAttrAccessibleAfterFirstUnlock" }
/// https://developer.apple.com/documentation/security/ksecattrapplicationtag
public var kSecAttrApplicationTag: CFString { "kSecAttrApplicationTag" }
/// https://developer.apple.com/documentation/security/ksecattrkeytype
public var kSecAttrKeyType: CFString { "kSecAttrKeyType" }
/// https://developer.apple.com/documentation/security/ksecattrkeytypeecsecprimerandom
public var kSecAttrKeyTypeECSECPrimeRandom: CFString { "kSecAttrKeyTypeECSECPrimeRandom" }
/// https://developer.apple.com/documentation/security/ksecattrkeytypersa
public var kSecAttrKeyTypeRSA: CFString { "kSecAttrKeyTypeRSA" }
/// https://developer.apple.com/documentation/security/ksecattrkeyclass
public var kSecAttrKeyClass: CFString { "kSecAttrKeyClass" }
/// https://developer.apple.com/documentation/security/ksecattrkeyclassprivate
public var kSecAttrKeyClassPrivate: CFString { "kSecAttrKeyClassPrivate" }
/// https://developer.apple.com/documentation/security/ksecattrkeysizeinbits
public var kSecAttrKeySizeInBits: CFString { "kSecAttrKeySizeInBits" }
/// https://developer.apple.com/documentation/security/ksecattrtokenid
public var kSecAttrTokenID: CFString { "kSecAttrTokenID" }
/// https://developer.apple.com/documentation/security/ksecattrtokenidsecureenclave
public var kSecAttrTokenIDSecureEnclave: CFString { "kSecAttrTokenIDSecureEnclave" }
/// https://developer.apple.com/documentation/security/ksecattrispermanent
public var kSecAttrIsPermanent: CFString { "kSecAttrIsPermanent" }
/// https://developer.apple.com/documentation/security/ksecprivatekeyattrs
public var kSecPrivateKeyAttrs: CFString { "kSecPrivateKeyAttrs" }

// MARK: Search, return and use keys — https://developer.apple.com/documentation/security/search-attribute-keys-and-values

/// https://developer.apple.com/documentation/security/ksecvaluedata
public var kSecValueData: CFString { "kSecValueData" }
/// https://developer.apple.com/documentation/security/ksecreturndata
public var kSecReturnData: CFString { "kSecReturnData" }
/// https://developer.apple.com/documentation/security/ksecreturnattributes
public var kSecReturnAttributes: CFString { "kSecReturnAttributes" }
/// https://developer.apple.com/documentation/security/ksecreturnref
public var kSecReturnRef: CFString { "kSecReturnRef" }
/// https://developer.apple.com/documentation/security/ksecmatchlimit
public var kSecMatchLimit: CFString { "kSecMatchLimit" }
/// https://developer.apple.com/documentation/security/ksecmatchlimitone
public var kSecMatchLimitOne: CFString { "kSecMatchLimitOne" }
/// https://developer.apple.com/documentation/security/ksecmatchlimitall
public var kSecMatchLimitAll: CFString { "kSecMatchLimitAll" }
/// https://developer.apple.com/documentation/security/ksecusedataprotectionkeychain (iOS 13, macOS 10.15)
public var kSecUseDataProtectionKeychain: CFString { "kSecUseDataProtectionKeychain" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationcontext
public var kSecUseAuthenticationContext: CFString { "kSecUseAuthenticationContext" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationui
public var kSecUseAuthenticationUI: CFString { "kSecUseAuthenticationUI" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuiskip — still supported, for
/// `SecItemCopyMatching` only (SecItem.h): matching items that need authentication are left out.
public var kSecUseAuthenticationUISkip: CFString { "kSecUseAuthenticationUISkip" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuiallow — deprecated (iOS 14, macOS 11).
@available(*, deprecated, message: "Use kSecUseAuthenticationContext and LAContext.interactionNotAllowed")
public var kSecUseAuthenticationUIAllow: CFString { "kSecUseAuthenticationUIAllow" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuifail — deprecated (iOS 14, macOS 11).
@available(*, deprecated, message: "Use kSecUseAuthenticationContext and LAContext.interactionNotAllowed")
public var kSecUseAuthenticationUIFail: CFString { "kSecUseAuthenticationUIFail" }

// MARK: Keychain items — https://developer.apple.com/documentation/security/keychain-items

/// https://developer.apple.com/documentation/security/secitemadd(_:_:)
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemcopymatching(_:_:)
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemupdate(_:_:)
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemdelete(_:)
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { errSecUnimplemented }

// MARK: Access control — https://developer.apple.com/documentation/security/secaccesscontrol

/// https://developer.apple.com/documentation/security/secaccesscontrol
public final class SecAccessControl {}
/// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags (CFOptionFlags: UInt)
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = Self(rawValue: 1 << 0)
    public static let biometryAny = Self(rawValue: 1 << 1)
    public static let biometryCurrentSet = Self(rawValue: 1 << 3)
    public static let devicePasscode = Self(rawValue: 1 << 4)
    /// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags/companion (iOS 18, macOS 15)
    public static let companion = Self(rawValue: 1 << 5)
    public static let or = Self(rawValue: 1 << 14)
    public static let and = Self(rawValue: 1 << 15)
    public static let privateKeyUsage = Self(rawValue: 1 << 30)
    public static let applicationPassword = Self(rawValue: 1 << 31)
}
/// https://developer.apple.com/documentation/security/secaccesscontrolcreatewithflags(_:_:_:_:)
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? { nil }

// MARK: Keys — https://developer.apple.com/documentation/security/seckey

/// https://developer.apple.com/documentation/security/seckey
public final class SecKey {}
/// https://developer.apple.com/documentation/security/seckeyalgorithm
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// https://developer.apple.com/documentation/security/seckeyalgorithm/ecdsasignaturemessagex962sha256
    public static let ecdsaSignatureMessageX962SHA256 = Self(rawValue: "algid:sign:ECDSA:message-X962:SHA256")
    /// https://developer.apple.com/documentation/security/seckeyalgorithm/eciesencryptioncofactorvariableivx963sha256aesgcm
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = Self(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
}
/// https://developer.apple.com/documentation/security/seckeycreaterandomkey(_:_:)
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? { nil }
/// https://developer.apple.com/documentation/security/seckeycopypublickey(_:)
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? { nil }
/// https://developer.apple.com/documentation/security/seckeycopyexternalrepresentation(_:_:)
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? { nil }
/// https://developer.apple.com/documentation/security/seckeycreatesignature(_:_:_:_:)
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    nil
}
/// https://developer.apple.com/documentation/security/seckeycreatedecrypteddata(_:_:_:_:)
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?)
    -> CFData?
{ nil }

// MARK: Result codes — https://developer.apple.com/documentation/security/security-framework-result-codes

/// https://developer.apple.com/documentation/security/errsecsuccess
public let errSecSuccess: OSStatus = 0
/// https://developer.apple.com/documentation/security/errsecunimplemented
public let errSecUnimplemented: OSStatus = -4
/// https://developer.apple.com/documentation/security/errsecparam
public let errSecParam: OSStatus = -50
/// https://developer.apple.com/documentation/security/errsecusercanceled
public let errSecUserCanceled: OSStatus = -128
/// https://developer.apple.com/documentation/security/errsecnotavailable
public let errSecNotAvailable: OSStatus = -25291
/// https://developer.apple.com/documentation/security/errsecauthfailed
public let errSecAuthFailed: OSStatus = -25293
/// https://developer.apple.com/documentation/security/errsecduplicateitem
public let errSecDuplicateItem: OSStatus = -25299
/// https://developer.apple.com/documentation/security/errsecitemnotfound
public let errSecItemNotFound: OSStatus = -25300
/// https://developer.apple.com/documentation/security/errsecinteractionnotallowed
public let errSecInteractionNotAllowed: OSStatus = -25308
/// https://developer.apple.com/documentation/security/errsecdecode
public let errSecDecode: OSStatus = -26275
/// https://developer.apple.com/documentation/security/errsecmissingentitlement
public let errSecMissingEntitlement: OSStatus = -34018
/// https://developer.apple.com/documentation/security/errsecverifyfailed
public let errSecVerifyFailed: OSStatus = -67808
