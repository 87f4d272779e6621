import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files only their owner may read, from the first byte.
package enum PrivateFile {
    /// Writing failed; `path` names the file (never its contents).
    package struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        package let path: String
        package var description: String { "cannot write \(path)" }
    }

    /// Writes `data` to `path` atomically: a temporary file created with mode 0600
    /// (`O_CREAT | O_EXCL`), written, synced and renamed over `path`. It never exists readable by
    /// others, not even between a write and a chmod.
    package static func write(_ data: Data, to path: String) throws(Failure) {
        let temporary = path + ".tmp-\(UUID().uuidString)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(path: path) }
        var written = 0
        let ok = data.withUnsafeBytes { bytes -> Bool in
            while written < bytes.count {
                let result = Foundation.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                if result <= 0 { return false }
                written += result
            }
            return fsync(descriptor) == 0
        }
        close(descriptor)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw Failure(path: path)
        }
    }

    /// Creates `directory` (and its parents) if needed and makes it 0700: only its owner lists or enters it.
    package static func makeDirectory(_ directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
    }
}
