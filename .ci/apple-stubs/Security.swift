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
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecClass: CFString { "kSecClass" }
/// https://developer.apple.com/documentation/security/ksecclassgenericpassword
@available(iOS 2.0, macOS 10.7, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecClassGenericPassword: CFString { "kSecClassGenericPassword" }
/// https://developer.apple.com/documentation/security/ksecclasskey
@available(iOS 2.0, macOS 10.7, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecClassKey: CFString { "kSecClassKey" }
/// https://developer.apple.com/documentation/security/ksecattrservice
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrService: CFString { "kSecAttrService" }
/// https://developer.apple.com/documentation/security/ksecattraccount
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccount: CFString { "kSecAttrAccount" }
/// https://developer.apple.com/documentation/security/ksecattrsynchronizable
@available(iOS 7.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrSynchronizable: CFString { "kSecAttrSynchronizable" }
/// https://developer.apple.com/documentation/security/ksecattraccesscontrol
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessControl: CFString { "kSecAttrAccessControl" }
/// https://developer.apple.com/documentation/security/ksecattraccessible
@available(iOS 4.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessible: CFString { "kSecAttrAccessible" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenpasscodesetthisdeviceonly
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString { "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlockedthisdeviceonly
@available(iOS 4.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString { "kSecAttrAccessibleWhenUnlockedThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlockthisdeviceonly
@available(iOS 4.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString { "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly" }
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlocked
@available(iOS 4.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessibleWhenUnlocked: CFString { "kSecAttrAccessibleWhenUnlocked" }
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlock
@available(iOS 4.0, macOS 10.9, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrAccessibleAfterFirstUnlock: CFString { "kSecAttrAccessibleAfterFirstUnlock" }
/// https://developer.apple.com/documentation/security/ksecattrapplicationtag
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrApplicationTag: CFString { "kSecAttrApplicationTag" }
/// https://developer.apple.com/documentation/security/ksecattrkeytype
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrKeyType: CFString { "kSecAttrKeyType" }
/// https://developer.apple.com/documentation/security/ksecattrkeytypeecsecprimerandom
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public var kSecAttrKeyTypeECSECPrimeRandom: CFString { "kSecAttrKeyTypeECSECPrimeRandom" }
/// https://developer.apple.com/documentation/security/ksecattrkeytypersa
@available(iOS 2.0, macOS 10.7, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrKeyTypeRSA: CFString { "kSecAttrKeyTypeRSA" }
/// https://developer.apple.com/documentation/security/ksecattrkeyclass
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrKeyClass: CFString { "kSecAttrKeyClass" }
/// https://developer.apple.com/documentation/security/ksecattrkeyclassprivate
@available(iOS 2.0, macOS 10.7, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrKeyClassPrivate: CFString { "kSecAttrKeyClassPrivate" }
/// https://developer.apple.com/documentation/security/ksecattrkeysizeinbits
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrKeySizeInBits: CFString { "kSecAttrKeySizeInBits" }
/// https://developer.apple.com/documentation/security/ksecattrtokenid
@available(iOS 9.0, macOS 10.12, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrTokenID: CFString { "kSecAttrTokenID" }
/// https://developer.apple.com/documentation/security/ksecattrtokenidsecureenclave
@available(iOS 9.0, macOS 10.12, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrTokenIDSecureEnclave: CFString { "kSecAttrTokenIDSecureEnclave" }
/// https://developer.apple.com/documentation/security/ksecattrispermanent
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecAttrIsPermanent: CFString { "kSecAttrIsPermanent" }
/// https://developer.apple.com/documentation/security/ksecprivatekeyattrs
@available(iOS 2.0, macOS 10.8, visionOS 1.0, watchOS 1.0, tvOS 4.0, *)
public var kSecPrivateKeyAttrs: CFString { "kSecPrivateKeyAttrs" }

// MARK: Search, return and use keys — https://developer.apple.com/documentation/security/search-attribute-keys-and-values

/// https://developer.apple.com/documentation/security/ksecvaluedata
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecValueData: CFString { "kSecValueData" }
/// https://developer.apple.com/documentation/security/ksecreturndata
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecReturnData: CFString { "kSecReturnData" }
/// https://developer.apple.com/documentation/security/ksecreturnattributes
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecReturnAttributes: CFString { "kSecReturnAttributes" }
/// https://developer.apple.com/documentation/security/ksecreturnref
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecReturnRef: CFString { "kSecReturnRef" }
/// https://developer.apple.com/documentation/security/ksecmatchlimit
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecMatchLimit: CFString { "kSecMatchLimit" }
/// https://developer.apple.com/documentation/security/ksecmatchlimitone
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecMatchLimitOne: CFString { "kSecMatchLimitOne" }
/// https://developer.apple.com/documentation/security/ksecmatchlimitall
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecMatchLimitAll: CFString { "kSecMatchLimitAll" }
/// https://developer.apple.com/documentation/security/ksecusedataprotectionkeychain (iOS 13, macOS 10.15)
@available(iOS 13.0, macOS 10.15, visionOS 1.0, watchOS 6.0, tvOS 13.0, *)
public var kSecUseDataProtectionKeychain: CFString { "kSecUseDataProtectionKeychain" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationcontext
@available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecUseAuthenticationContext: CFString { "kSecUseAuthenticationContext" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationui
@available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecUseAuthenticationUI: CFString { "kSecUseAuthenticationUI" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuiskip — still supported, for
/// `SecItemCopyMatching` only (SecItem.h): matching items that need authentication are left out.
@available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public var kSecUseAuthenticationUISkip: CFString { "kSecUseAuthenticationUISkip" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuiallow — deprecated (iOS 14, macOS 11).
@available(iOS, introduced: 9.0, deprecated: 14.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(macOS, introduced: 10.11, deprecated: 11.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(visionOS, introduced: 1.0, deprecated: 1.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(watchOS, introduced: 2.0, deprecated: 7.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(tvOS, introduced: 9.0, deprecated: 14.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
public var kSecUseAuthenticationUIAllow: CFString { "kSecUseAuthenticationUIAllow" }
/// https://developer.apple.com/documentation/security/ksecuseauthenticationuifail — deprecated (iOS 14, macOS 11).
@available(iOS, introduced: 9.0, deprecated: 14.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(macOS, introduced: 10.11, deprecated: 11.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(visionOS, introduced: 1.0, deprecated: 1.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(watchOS, introduced: 2.0, deprecated: 7.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
@available(tvOS, introduced: 9.0, deprecated: 14.0, message: "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property")
public var kSecUseAuthenticationUIFail: CFString { "kSecUseAuthenticationUIFail" }

// MARK: Keychain items — https://developer.apple.com/documentation/security/keychain-items

/// https://developer.apple.com/documentation/security/secitemadd(_:_:)
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemcopymatching(_:_:)
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemupdate(_:_:)
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { errSecUnimplemented }
/// https://developer.apple.com/documentation/security/secitemdelete(_:)
@available(iOS 2.0, macOS 10.6, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { errSecUnimplemented }

// MARK: Access control — https://developer.apple.com/documentation/security/secaccesscontrol

/// https://developer.apple.com/documentation/security/secaccesscontrol
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public final class SecAccessControl {}
/// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags (CFOptionFlags: UInt)
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = Self(rawValue: 1 << 0)
    @available(iOS 11.3, macOS 10.13.4, visionOS 1.0, watchOS 4.3, tvOS 11.3, *)
    public static let biometryAny = Self(rawValue: 1 << 1)
    @available(iOS 11.3, macOS 10.13.4, visionOS 1.0, watchOS 4.3, tvOS 11.3, *)
    public static let biometryCurrentSet = Self(rawValue: 1 << 3)
    @available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
    public static let devicePasscode = Self(rawValue: 1 << 4)
    /// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags/companion (iOS 18, macOS 15)
    @available(iOS 18.0, macOS 15.0, visionOS 2.0, watchOS 11.0, tvOS 18.0, *)
    public static let companion = Self(rawValue: 1 << 5)
    @available(iOS 9.0, macOS 10.12.1, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
    public static let or = Self(rawValue: 1 << 14)
    @available(iOS 9.0, macOS 10.12.1, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
    public static let and = Self(rawValue: 1 << 15)
    @available(iOS 9.0, macOS 10.12.1, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
    public static let privateKeyUsage = Self(rawValue: 1 << 30)
    @available(iOS 9.0, macOS 10.12.1, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
    public static let applicationPassword = Self(rawValue: 1 << 31)
}
/// https://developer.apple.com/documentation/security/secaccesscontrolcreatewithflags(_:_:_:_:)
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? { nil }

// MARK: Keys — https://developer.apple.com/documentation/security/seckey

/// https://developer.apple.com/documentation/security/seckey
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public final class SecKey {}
/// https://developer.apple.com/documentation/security/seckeyalgorithm
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// https://developer.apple.com/documentation/security/seckeyalgorithm/ecdsasignaturemessagex962sha256
    public static let ecdsaSignatureMessageX962SHA256 = Self(rawValue: "algid:sign:ECDSA:message-X962:SHA256")
    /// https://developer.apple.com/documentation/security/seckeyalgorithm/eciesencryptioncofactorvariableivx963sha256aesgcm
    @available(iOS 11.0, macOS 10.13, visionOS 1.0, watchOS 4.0, tvOS 11.0, *)
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = Self(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
}
/// https://developer.apple.com/documentation/security/seckeycreaterandomkey(_:_:)
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? { nil }
/// https://developer.apple.com/documentation/security/seckeycopypublickey(_:)
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? { nil }
/// https://developer.apple.com/documentation/security/seckeycopyexternalrepresentation(_:_:)
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? { nil }
/// https://developer.apple.com/documentation/security/seckeycreatesignature(_:_:_:_:)
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    nil
}
/// https://developer.apple.com/documentation/security/seckeycreatedecrypteddata(_:_:_:_:)
@available(iOS 10.0, macOS 10.12, visionOS 1.0, watchOS 3.0, tvOS 10.0, *)
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?)
    -> CFData?
{ nil }

// MARK: Result codes — https://developer.apple.com/documentation/security/security-framework-result-codes

/// https://developer.apple.com/documentation/security/errsecsuccess
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecSuccess: OSStatus = 0
/// https://developer.apple.com/documentation/security/errsecunimplemented
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecUnimplemented: OSStatus = -4
/// https://developer.apple.com/documentation/security/errsecparam
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecParam: OSStatus = -50
/// https://developer.apple.com/documentation/security/errsecusercanceled
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecUserCanceled: OSStatus = -128
/// https://developer.apple.com/documentation/security/errsecnotavailable
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecNotAvailable: OSStatus = -25291
/// https://developer.apple.com/documentation/security/errsecauthfailed
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecAuthFailed: OSStatus = -25293
/// https://developer.apple.com/documentation/security/errsecduplicateitem
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecDuplicateItem: OSStatus = -25299
/// https://developer.apple.com/documentation/security/errsecitemnotfound
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecItemNotFound: OSStatus = -25300
/// https://developer.apple.com/documentation/security/errsecinteractionnotallowed
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecInteractionNotAllowed: OSStatus = -25308
/// https://developer.apple.com/documentation/security/errsecdecode
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecDecode: OSStatus = -26275
/// https://developer.apple.com/documentation/security/errsecmissingentitlement
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecMissingEntitlement: OSStatus = -34018
/// https://developer.apple.com/documentation/security/errsecverifyfailed
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public let errSecVerifyFailed: OSStatus = -67808
