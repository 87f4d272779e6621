// The Core Foundation names the Apple layer uses, for the Linux type-check of `BioAuthApple`
// (`.ci/apple-typecheck`). Written from developer.apple.com's Core Foundation pages; on Apple
// platforms these are toll-free bridged to the Foundation classes, so the stubs alias them.
// Not an SDK: nothing here is copied from one, and none of it is linked into the package.
@_exported import Foundation

/// https://developer.apple.com/documentation/corefoundation/cfstring (toll-free bridged with NSString)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias CFString = NSString
/// https://developer.apple.com/documentation/corefoundation/cfdictionary (toll-free bridged with NSDictionary)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias CFDictionary = NSDictionary
/// https://developer.apple.com/documentation/corefoundation/cfdata (toll-free bridged with NSData)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias CFData = NSData
/// https://developer.apple.com/documentation/corefoundation/cferror (toll-free bridged with NSError)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias CFError = NSError
/// https://developer.apple.com/documentation/corefoundation/cftyperef (`AnyObject` in Swift)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias CFTypeRef = AnyObject
/// https://developer.apple.com/documentation/corefoundation/cfallocator
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public final class CFAllocator {}
/// https://developer.apple.com/documentation/kernel/osstatus (`Int32`)
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias OSStatus = Int32
/// https://developer.apple.com/documentation/foundation/nserrorpointer — an autoreleasing pointer on
/// Apple platforms; `&error` on a `var error: NSError?` passes to either.
@available(iOS 2.0, macOS 10.0, visionOS 1.0, watchOS 2.0, tvOS 9.0, *)
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?
