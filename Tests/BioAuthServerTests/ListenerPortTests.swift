import BioAuthServerTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A second instance on one host whose management port is taken stops at once with a message
/// that names the flag, not a bare "Address already in use".
struct ListenerPortTests {
    @Test(.timeLimit(.minutes(3)))
    func aTakenManagementPortNamesItsFlag() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let (status, output) = try ServerProcess.command(
            ["--database", ":memory:", "--port", "0", "--management-port", "\(port)"], includingErrors: true)
        #expect(status != 0)
        #expect(output.contains("--management-port") && output.contains("127.0.0.1:\(port)"), "\(output)")
    }
}
