import Dispatch
import Foundation
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The opt-in `/metrics` endpoint: a minimal HTTP/1.1 server on a loopback TCP address
/// that answers `GET /metrics` (and `HEAD`) with Prometheus' text exposition, one
/// request per connection (`Connection: close`).
///
/// One normal-priority thread polls every socket without blocking: it never touches the
/// I/O thread (the exposition is read from the controller's atomics and snapshots), and a
/// hostile client cannot hold it. Limits: a request head is at most `maximumRequestBytes`
/// (431 past that) and must arrive whole within `timeout` seconds of connecting — a
/// deadline, not reset per byte, so a slowloris client is closed; an answer the client
/// does not read within `timeout` is dropped; at `maximumClients` the oldest connection is
/// closed to make room; a body is never read. A swarm of scrapers costs at most one
/// rendering per `renderInterval`, the answer is reused in between.
public final class MetricsHTTPServer: @unchecked Sendable {
    public typealias Render = @Sendable () -> String

    public let host: String
    /// The port bound (the one asked for, or the kernel's choice for 0).
    public let port: Int
    public let timeout: Double
    public let maximumClients: Int
    public let maximumRequestBytes: Int
    public let renderInterval: Double

    /// Counts for tests and logs.
    public struct Statistics: Equatable, Sendable {
        public var clients = 0
        public var accepted = 0
        public var served = 0
        /// Connections closed at their deadline.
        public var timedOut = 0
        /// Connections closed to make room for a new one.
        public var evicted = 0
        /// Requests answered 4xx.
        public var refused = 0
        /// Times the exposition was rendered (the rest reused a recent one).
        public var renders = 0
    }

    private final class Connection {
        let descriptor: Int32
        var input: [UInt8] = []
        var output: [UInt8] = []
        var written = 0
        var deadline: Double
        var answering = false
        init(descriptor: Int32, deadline: Double) {
            self.descriptor = descriptor
            self.deadline = deadline
        }
    }

    private let listener: Int32
    private let wake: WakePipe
    private let render: Render
    private let logger: Logger
    private let running = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let loopEnded = DispatchSemaphore(value: 0)
    private let published = ControlLock(Statistics())

    // Loop-thread state.
    private var connections: [Connection] = []
    private var counts = Statistics()
    private var acceptor: ConnectionAcceptor
    private var cached: (body: [UInt8], at: Double)?
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

    /// Binds `host:port` (numeric loopback addresses only: the config checks the address
    /// first, and this refuses anything else again).
    public init(
        host: String, port: Int, timeout: Double = 5, maximumClients: Int = 32, maximumRequestBytes: Int = 8192,
        renderInterval: Double = 0.1, logger: Logger, render: @escaping Render
    ) throws {
        guard timeout > 0, timeout.isFinite, maximumClients > 0, maximumRequestBytes >= 64, (0...65535).contains(port) else {
            throw MetricsServerError("the metrics endpoint needs a positive timeout, at least one client and 64 request bytes, and a port 0…65535")
        }
        self.host = host
        self.timeout = timeout
        self.maximumClients = maximumClients
        self.maximumRequestBytes = maximumRequestBytes
        self.renderInterval = renderInterval
        self.logger = logger
        self.render = render
        let (fd, boundPort) = try Self.bind(host: host, port: port)
        listener = fd
        acceptor = ConnectionAcceptor(listener: fd)
        self.port = boundPort
        do throws(AudioError) {
            wake = try WakePipe()
        } catch {
            close(fd)
            throw MetricsServerError(error.message)
        }
    }

    deinit {
        stop()
        chunk.deallocate()
    }

    /// A listening non-blocking socket on the loopback address `host`, and its port.
    private static func bind(host: String, port: Int) throws -> (Int32, Int) {
        var v4 = in_addr(), v6 = in6_addr()
        let family: Int32
        if inet_pton(AF_INET, host, &v4) == 1 {
            guard withUnsafeBytes(of: v4.s_addr, { $0[0] }) == 127 else { throw MetricsServerError("\(host) is not a loopback address") }
            family = AF_INET
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            guard withUnsafeBytes(of: v6, { $0.prefix(15).allSatisfy { $0 == 0 } && $0[15] == 1 }) else {
                throw MetricsServerError("\(host) is not a loopback address")
            }
            family = AF_INET6
        } else {
            throw MetricsServerError("'\(host)' is not a numeric loopback address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw MetricsServerError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if family == AF_INET {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr = v4
            bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        } else {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = v6
            bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw MetricsServerError("cannot listen on \(family == AF_INET6 ? "[\(host)]" : host):\(port): \(reason)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let boundPort = withUnsafeBytes(of: storage) { bytes in Int(UInt16(bytes[2]) << 8 | UInt16(bytes[3])) }
        return (fd, boundPort)
    }

    public var statistics: Statistics { published.withLock { $0 } }

    /// `http://host:port/metrics`.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/metrics" }

    /// Starts the server's thread.
    public func start() {
        guard !stopping.load(ordering: .acquiring), !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            loop()
            loopEnded.signal()
        }
        thread.name = "sonora-metrics"
        thread.start()
    }

    /// Closes every connection and the listening socket.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if running.load(ordering: .acquiring) {
            wake.signal()
            loopEnded.wait()
        }
        close(listener)
    }

    private static func now() -> Double { HostTime.now.seconds }

    // MARK: The loop

    private func loop() {
        var descriptors: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            let now = Self.now()
            for connection in connections where connection.deadline <= now {
                counts.timedOut += 1
                remove(connection)
            }
            publish()
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wake.readDescriptor, events: Int16(POLLIN), revents: 0))
            descriptors.append(pollfd(fd: acceptor.pollDescriptor(now: now), events: Int16(POLLIN), revents: 0))
            var nearest = now + 1
            if acceptor.pausedUntil > now { nearest = min(nearest, acceptor.pausedUntil) }
            for connection in connections {
                nearest = min(nearest, connection.deadline)
                descriptors.append(pollfd(fd: connection.descriptor, events: Int16(connection.answering ? POLLOUT : POLLIN), revents: 0))
            }
            let milliseconds = Int32(max(0, ((nearest - now) * 1000).rounded(.up)))
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready < 0 && errno != EINTR { logger.error("metrics endpoint: poll failed: \(String(cString: strerror(errno)))"); break }
            guard ready > 0 else { continue }
            if descriptors[0].revents != 0 { wake.drain() }
            let current = connections
            for (index, connection) in current.enumerated() where descriptors[index + 2].revents != 0 {
                if connection.answering { flush(connection) } else { receive(connection) }
            }
            if descriptors[1].revents != 0 { acceptClients() }
        }
        for connection in connections { close(connection.descriptor) }
        connections.removeAll()
        publish()
    }

    private func publish() {
        var snapshot = counts
        snapshot.clients = connections.count
        published.withLock { $0 = snapshot }
    }

    private func acceptClients() {
        while true {
            let fd: Int32
            switch acceptor.accept() {
            case .connection(let accepted): fd = accepted
            case .drained: return
            case .outOfDescriptors:
                // Close the oldest, or stop accepting for a moment (see ConnectionAcceptor).
                if let oldest = connections.first {
                    counts.evicted += 1
                    remove(oldest)
                    continue
                }
                acceptor.pause(now: Self.now())
                return
            }
            counts.accepted += 1
            if connections.count >= maximumClients, let oldest = connections.first {
                counts.evicted += 1
                remove(oldest)
            }
            connections.append(Connection(descriptor: fd, deadline: Self.now() + timeout))
        }
    }

    private func receive(_ connection: Connection) {
        let count = recv(connection.descriptor, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT))
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            remove(connection)
            return
        }
        guard count > 0 else { remove(connection); return }  // closed before a whole request
        connection.input.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<count]))
        if let end = Self.endOfHead(connection.input) {
            answer(connection, head: connection.input[..<end])
        } else if connection.input.count > maximumRequestBytes {
            counts.refused += 1
            respond(connection, status: "431 Request Header Fields Too Large", body: "request head longer than \(maximumRequestBytes) bytes\n")
        }
    }

    /// The index just past the blank line that ends the head (CRLF CRLF, or LF LF).
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index < bytes.count {
            if bytes[index] == 10 {
                if index + 1 < bytes.count && bytes[index + 1] == 10 { return index + 2 }
                if index + 2 < bytes.count && bytes[index + 1] == 13 && bytes[index + 2] == 10 { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    private func answer(_ connection: Connection, head: ArraySlice<UInt8>) {
        let requestLine = head.prefix { $0 != 13 && $0 != 10 }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count == 3, parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0", parts[1].hasPrefix("/") else {
            counts.refused += 1
            respond(connection, status: "400 Bad Request", body: "expected a request line such as: GET /metrics HTTP/1.1\n")
            return
        }
        let method = parts[0]
        let path = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard method == "GET" || method == "HEAD" else {
            counts.refused += 1
            respond(connection, status: "405 Method Not Allowed", extraHeaders: "Allow: GET, HEAD\r\n", body: "only GET and HEAD\n")
            return
        }
        guard path == "/metrics" else {
            counts.refused += 1
            respond(connection, status: "404 Not Found", body: "the metrics are at /metrics\n", headOnly: method == "HEAD")
            return
        }
        let now = Self.now()
        let body: [UInt8]
        if let cached, now - cached.at < renderInterval {
            body = cached.body
        } else {
            body = Array(render().utf8)
            cached = (body, now)
            counts.renders += 1
        }
        counts.served += 1
        respond(connection, status: "200 OK", contentType: "text/plain; version=0.0.4; charset=utf-8", body: body, headOnly: method == "HEAD")
    }

    private func respond(
        _ connection: Connection, status: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "",
        body: String, headOnly: Bool = false
    ) {
        respond(connection, status: status, contentType: contentType, extraHeaders: extraHeaders, body: Array(body.utf8), headOnly: headOnly)
    }

    private func respond(
        _ connection: Connection, status: String, contentType: String, extraHeaders: String = "", body: [UInt8], headOnly: Bool
    ) {
        let head = "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\(extraHeaders)Connection: close\r\n\r\n"
        connection.input = []
        connection.output = Array(head.utf8) + (headOnly ? [] : body)
        connection.written = 0
        connection.answering = true
        // The answer gets its own deadline: a client that does not read it is dropped.
        connection.deadline = Self.now() + timeout
        // Counted before the client can read the answer: whoever got it sees it counted.
        publish()
        flush(connection)
    }

    private func flush(_ connection: Connection) {
        switch NonBlockingSocket.sendRemaining(connection.descriptor, connection.output, written: &connection.written) {
        case .complete: break
        case .wouldBlock: return
        case .failed:
            remove(connection)
            return
        }
        // Everything sent: close our side; the client sees the end of the answer.
        shutdown(connection.descriptor, Int32(SHUT_WR))
        remove(connection)
    }

    private func remove(_ connection: Connection) {
        guard let index = connections.firstIndex(where: { $0 === connection }) else { return }
        close(connection.descriptor)
        connections.remove(at: index)
    }
}

public struct MetricsServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
