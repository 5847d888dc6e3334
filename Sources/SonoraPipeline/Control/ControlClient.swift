import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A client of the control socket (what `sonora ctl` uses): one request, one answer,
/// within `timeout` seconds in all — a hung daemon gives an error, not a wait.
public struct ControlClient: Sendable {
    public var path: String
    public var timeout: Double

    /// `timeout` is clamped to 1 µs…1 day (a timeval and poll's milliseconds must hold it).
    public init(path: String, timeout: Double = 5) {
        self.path = path
        self.timeout = timeout.isFinite ? min(max(timeout, 1e-6), 86_400) : 86_400
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends `request` and returns the answer line (without its newline).
    public func exchange(_ request: ControlRequest) throws -> Data {
        try exchange(line: request.line())
    }

    /// Sends `request` and decodes the answer.
    public func send(_ request: ControlRequest) throws -> ControlResponse {
        try ControlResponse.decode(exchange(request), for: request.command)
    }

    /// Sends one raw line (it must end in a newline) and returns the answer line.
    public func exchange(line: [UInt8]) throws -> Data {
        guard path.utf8.count <= ControlSocketPath.maximumPathBytes else {
            throw Failure("socket path too long (\(path.utf8.count) bytes; at most \(ControlSocketPath.maximumPathBytes)): \(path)")
        }
        let deadline = Self.now() + timeout
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // A Unix-socket connect waits while the server's backlog is full; SO_SNDTIMEO bounds it.
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = ControlSocketPath.address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            if errno == EAGAIN || errno == EINPROGRESS { throw Failure("the daemon at \(path) did not accept a connection within \(Self.seconds(timeout)) (is it hung?)") }
            throw Failure("cannot connect to \(path): \(String(cString: strerror(errno))) (is `sonora run` running with control.socket: \(path)?)")
        }
        var offset = 0
        while offset < line.count {
            let sent = line[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else {
                if errno == EAGAIN { throw Failure("the daemon at \(path) did not take the request within \(Self.seconds(timeout)) (is it hung?)") }
                throw Failure("cannot send to \(path): \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
        var answer = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !answer.contains(10) {
            let remaining = deadline - Self.now()
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = remaining > 0 ? poll(&descriptor, 1, Int32((remaining * 1000).rounded(.up))) : 0
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw Failure("no answer from the daemon at \(path) within \(Self.seconds(timeout)) (is it hung? --timeout sets the wait)") }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure("the daemon at \(path) closed the connection without an answer") }
            answer.append(contentsOf: chunk[0..<count])
            guard answer.count <= ControlProtocol.maximumResponseBytes + 1 else { throw Failure("the daemon's answer is longer than \(ControlProtocol.maximumResponseBytes) bytes") }
        }
        return answer.prefix { $0 != 10 }
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    static func seconds(_ value: Double) -> String { String(format: "%g s", value) }
}
