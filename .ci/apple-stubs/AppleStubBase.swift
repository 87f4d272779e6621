// The Core Foundation names the Apple layer uses, for the Linux type-check of `BioAuthApple`
// (`.ci/apple-typecheck`). Written from developer.apple.com's Core Foundation pages; on Apple
// platforms these are toll-free bridged to the Foundation classes, so the stubs alias them.
// Not an SDK: nothing here is copied from one, and none of it is linked into the package.
@_exported import Foundation

/// https://developer.apple.com/documentation/corefoundation/cfstring (toll-free bridged with NSString)
public typealias CFString = NSString
/// https://developer.apple.com/documentation/corefoundation/cfdictionary (toll-free bridged with NSDictionary)
public typealias CFDictionary = NSDictionary
/// https://developer.apple.com/documentation/corefoundation/cfdata (toll-free bridged with NSData)
public typealias CFData = NSData
/// https://developer.apple.com/documentation/corefoundation/cferror (toll-free bridged with NSError)
public typealias CFError = NSError
/// https://developer.apple.com/documentation/corefoundation/cftyperef (`AnyObject` in Swift)
public typealias CFTypeRef = AnyObject
/// https://developer.apple.com/documentation/corefoundation/cfallocator
public final class CFAllocator {}
/// https://developer.apple.com/documentation/kernel/osstatus (`Int32`)
public typealias OSStatus = Int32
/// https://developer.apple.com/documentation/foundation/nserrorpointer — an autoreleasing pointer on
/// Apple platforms; `&error` on a `var error: NSError?` passes to either.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?
