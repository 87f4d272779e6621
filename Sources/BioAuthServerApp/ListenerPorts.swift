import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a listener can have its port, asked before the server starts: a second instance on one
/// host otherwise fails with a bare "Address already in use" that names neither listener nor flag.
enum ListenerPorts {
    /// Throws a message naming `flag` when something on this host listens on `host`:`port`
    /// already. Port 0 (a free one) and a host that is not an IPv4 address are not checked: the
    /// listener's own bind answers for them.
    static func requireFree(host: String, port: Int, listener: String, flag: String) throws {
        guard port != 0, let address = inet(host) else { return }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_addr = address
        socketAddress.sin_port = in_port_t(UInt16(port).bigEndian)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound != 0, errno == EADDRINUSE else { return }
        throw ValidationError(
            "the \(listener) cannot listen on \(host):\(port): something on this host listens there already (another "
                + "bioauth-server?). Give each instance its own \(flag), or 0 for a free port.")
    }

    private static func inet(_ host: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 ? address : nil
    }
}
