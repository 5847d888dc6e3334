#if canImport(Glibc)
import Glibc
#endif

/// systemd's service notification protocol (sd_notify(3)) without libsystemd: each message
/// is one datagram of `KEY=VALUE` lines sent to the `AF_UNIX` socket named by `NOTIFY_SOCKET`
/// (a path, or an abstract name written with a leading `@`). Without the variable every
/// send is a no-op, so `sonora run` behaves the same outside systemd.
public final class ServiceNotifier: @unchecked Sendable {
    /// The socket's address as given (`/run/systemd/notify`, `@name`); nil: not under a supervisor.
    public let socketName: String?
    private var address = sockaddr_un()
    private var addressLength = socklen_t(0)
    private let descriptor: Int32

    /// Reads `NOTIFY_SOCKET` from `environment`; a value that is not an absolute path or an
    /// `@` name, or too long for `sun_path`, disables notification (as libsystemd does).
    public init(environment: [String: String]) {
        guard let name = environment["NOTIFY_SOCKET"], let parsed = Self.address(of: name) else {
            socketName = nil
            descriptor = -1
            return
        }
        socketName = name
        (address, addressLength) = parsed
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    public var isEnabled: Bool { descriptor >= 0 }

    /// The `sockaddr_un` for a notify socket name: a path is NUL-terminated; an abstract
    /// name (`@x`) starts with a NUL byte and its length is exactly the name's (no terminator).
    static func address(of name: String) -> (sockaddr_un, socklen_t)? {
        var bytes = Array(name.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        guard abstract || bytes.first == UInt8(ascii: "/"), bytes.count >= 2 else { return nil }
        if abstract { bytes[0] = 0 }
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count <= (abstract ? capacity : capacity - 1) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: bytes)
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        return (address, socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1)))
    }

    /// Sends one message (lines joined by newlines). Returns false if it could not be sent
    /// (no supervisor, or the socket is gone); a supervisor that went away is not an error.
    @discardableResult
    public func send(_ lines: String...) -> Bool { send(lines: lines) }

    @discardableResult
    public func send(lines: [String]) -> Bool {
        guard descriptor >= 0 else { return false }
        let message = Array(lines.joined(separator: "\n").utf8)
        var target = address
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &target) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, addressLength)
                }
            }
        }
        return sent == message.count
    }

    /// `STATUS=` carries one line: newlines in the text would start new assignments.
    public static func statusLine(_ text: String) -> String {
        "STATUS=" + text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// `MONOTONIC_USEC=`: systemd (Type=notify-reload) wants it beside `RELOADING=1`.
    public static var monotonicLine: String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)"
    }
}
