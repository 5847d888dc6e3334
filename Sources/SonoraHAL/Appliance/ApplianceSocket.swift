import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// Where the appliance's server socket lives, and the socket calls both sides share.
public enum ApplianceSocket {
    /// The longest line either side sends or accepts (a longer one is refused and the
    /// connection closed).
    /// This program's name as the appliance lists it: the executable's file name.
    public static var programName: String {
        let path = CommandLine.arguments.first ?? "sonora-client"
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    public static let maximumLineBytes = 64 * 1024

    /// `$XDG_RUNTIME_DIR/sonora/server.sock` when XDG_RUNTIME_DIR is set, else
    /// `/run/sonora/server.sock` for root, else `/tmp/sonora-<uid>/server.sock`.
    public static var defaultPath: String {
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
            return runtime + "/sonora/server.sock"
        }
        return getuid() == 0 ? "/run/sonora/server.sock" : "/tmp/sonora-\(getuid())/server.sock"
    }

    /// The path a client connects to: `SONORA_SERVER`, else `defaultPath`.
    public static func clientPath() -> String {
        if let named = getenv("SONORA_SERVER").map({ String(cString: $0) }), !named.isEmpty { return named }
        return defaultPath
    }

    /// A Unix socket address for `path`, or an error naming a path too long for one.
    static func address(_ path: String) throws(AudioError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw AudioError(.badFilePath, "socket path '\(path)' is \(bytes.isEmpty ? "empty" : "longer than \(capacity - 1) bytes")")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        return address
    }

    /// A connected, blocking, close-on-exec stream socket to `path`.
    static func connect(_ path: String) throws(AudioError) -> Int32 {
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AudioError(.hardwareUnspecified, "cannot create a socket: \(errorText(errno))") }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            let code = errno
            close(fd)
            throw AudioError(.hardwareNotRunning, "no Sonora appliance at \(path): \(errorText(code))")
        }
        return fd
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// "N open, limit M" for this process (its descriptors and RLIMIT_NOFILE), for errors
    /// about running out of them.
    static func openDescriptorSummary() -> String {
        var open = "open count unknown"
        if let directory = opendir("/proc/self/fd") {
            var entries = 0
            while let entry = readdir(directory) {
                if entry.pointee.d_name.0 != UInt8(ascii: ".") { entries += 1 }
            }
            closedir(directory)
            open = "\(entries - 1) open"  // less the directory's own descriptor
        }
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return open }
        return "\(open), limit \(limit.rlim_cur)"
    }
}

/// True when an appliance accepts connections at `path` (default: `clientPath()`): one
/// non-blocking connect, closed at once.
public func isApplianceRunning(path: String? = nil) -> Bool {
    guard var address = try? ApplianceSocket.address(path ?? ApplianceSocket.clientPath()) else { return false }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    // A full backlog (EAGAIN) still means someone listens.
    return status == 0 || errno == EAGAIN
}
