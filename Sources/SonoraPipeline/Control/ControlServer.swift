import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The control socket: a Unix-domain stream socket (created 0600, removed on exit) that
/// takes newline-delimited JSON requests and answers each with one JSON line. Each client
/// gets its own thread; a request longer than `maximumRequestBytes` or a client silent
/// for `idleTimeout` seconds gets an error and is closed. Nothing here touches the I/O
/// thread except through the controller, which never blocks it.
public final class ControlServer: @unchecked Sendable {
    public static let maximumRequestBytes = 64 * 1024
    public let path: String
    public let idleTimeout: Double
    private let socket: Int32
    private let handler: @Sendable ([String: Any]) -> [String: Any]
    private let running = Atomic<Bool>(true)
    private let clients = Atomic<Int>(0)
    private let logger: Logger
    private var acceptThread: Thread?

    /// Binds `path`. Refuses when a live process already answers there; removes a stale
    /// socket file left by a process that died.
    public init(path: String, idleTimeout: Double = 10, logger: Logger, handler: @escaping @Sendable ([String: Any]) -> [String: Any]) throws {
        self.path = path
        self.idleTimeout = idleTimeout
        self.handler = handler
        self.logger = logger
        guard path.utf8.count < 100 else { throw ControlServerError("socket path '\(path)' is too long (at most 99 bytes)") }
        if FileManager.default.fileExists(atPath: path) {
            if Self.isLive(path) { throw ControlServerError("another process is serving \(path); stop it or choose another control.socket") }
            unlink(path)
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ControlServerError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = Self.address(path)
        let previous = umask(0o177)  // the socket file is created 0600
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        umask(previous)
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ControlServerError("cannot bind \(path): \(reason)")
        }
        chmod(path, 0o600)
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw ControlServerError("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        socket = fd
    }

    deinit { stop() }

    public func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "sonora-control"
        acceptThread = thread
        thread.start()
    }

    /// Stops accepting, closes the socket and removes its file.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
        unlink(path)
    }

    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(path.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes + [0])
        }
        return address
    }

    /// True if something accepts connections at `path`.
    static func isLive(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = address(path)
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        return result == 0
    }

    private func acceptLoop() {
        while running.load(ordering: .relaxed) {
            let client = accept(socket, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            guard clients.load(ordering: .relaxed) < 64 else {
                send(client, ["ok": false, "error": "too many clients"])
                close(client)
                continue
            }
            clients.wrappingAdd(1, ordering: .relaxed)
            let thread = Thread { [self] in
                serve(client)
                clients.wrappingSubtract(1, ordering: .relaxed)
            }
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: Int(idleTimeout), tv_usec: Int((idleTimeout - Double(Int(idleTimeout))) * 1e6))
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var pending = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .relaxed) {
            let count = recv(client, &chunk, chunk.count, 0)
            if count == 0 { return }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    send(client, ["ok": false, "error": "timed out: no request within \(Int(idleTimeout)) s"])
                }
                return
            }
            pending += chunk[0..<count]
            while let newline = pending.firstIndex(of: 10) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                respond(to: line, client)
            }
            if pending.count > Self.maximumRequestBytes {
                send(client, ["ok": false, "error": "request longer than \(Self.maximumRequestBytes) bytes"])
                return
            }
        }
    }

    private func respond(to line: [UInt8], _ client: Int32) {
        if line.allSatisfy({ $0 == 32 || $0 == 13 || $0 == 9 }) { return }
        guard line.count <= Self.maximumRequestBytes else {
            send(client, ["ok": false, "error": "request longer than \(Self.maximumRequestBytes) bytes"])
            return
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(line))
        } catch {
            send(client, ["ok": false, "error": "malformed JSON: \(String(decoding: line.prefix(80), as: UTF8.self))"])
            return
        }
        guard let request = object as? [String: Any] else {
            send(client, ["ok": false, "error": "a request is a JSON object such as {\"cmd\":\"status\"}"])
            return
        }
        send(client, handler(request))
    }

    private func send(_ client: Int32, _ response: [String: Any]) {
        guard var data = try? JSONSerialization.data(withJSONObject: response, options: [.sortedKeys]) else { return }
        data.append(10)
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Glibc.send(client, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return }
                offset += sent
            }
        }
    }
}

public struct ControlServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
