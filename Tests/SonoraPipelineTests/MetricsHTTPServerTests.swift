import Foundation
import Logging
import SonoraPipeline
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A TCP client for the tests: connects to a loopback port, sends, reads to the end.
final class MetricsTCPClient {
    let descriptor: Int32

    init(port: Int, host: String = "127.0.0.1") throws {
        let v6 = host.contains(":")
        descriptor = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var connected: Int32
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard connected == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    deinit { close(descriptor) }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Everything the server sends until it closes (nil if it has not closed within `seconds`).
    func readToEnd(within seconds: Double = 20) -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 1, 100) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return String(decoding: received, as: UTF8.self) }
            received += buffer[..<count]
        }
        return nil
    }
}

struct MetricsHTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: String

    init?(_ text: String) {
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ")
        guard first.count >= 2, first[0] == "HTTP/1.1", let status = Int(first[1]) else { return nil }
        self.status = status
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        body = String(text[split.upperBound...])
    }
}

@Suite("Metrics endpoint: HTTP/1.1 GET /metrics on loopback, hostile clients", .serialized)
struct MetricsHTTPServerTests {
    static let exposition = "# HELP sonora_up 1 when up\n# TYPE sonora_up gauge\nsonora_up 1\n"

    final class Renders: @unchecked Sendable {
        let count = Atomic<Int>(0)
    }

    static func server(
        timeout: Double = 5, maximumClients: Int = 32, host: String = "127.0.0.1", renders: Renders = Renders(), body: String = exposition
    ) throws -> MetricsHTTPServer {
        let server = try MetricsHTTPServer(
            host: host, port: 0, timeout: timeout, maximumClients: maximumClients, maximumRequestBytes: 1024, renderInterval: 0,
            logger: Logger(label: "test")
        ) {
            renders.count.wrappingAdd(1, ordering: .relaxed)
            return body
        }
        server.start()
        return server
    }

    static func get(_ server: MetricsHTTPServer, _ request: String = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n") throws -> MetricsHTTPAnswer? {
        let client = try MetricsTCPClient(port: server.port, host: server.host)
        client.send(request)
        return client.readToEnd().flatMap(MetricsHTTPAnswer.init)
    }

    @Test("GET /metrics answers 200 with the exposition in text format 0.0.4, then closes")
    func get() throws {
        let server = try Self.server()
        defer { server.stop() }
        #expect(server.port > 0)
        let answer = try #require(try Self.get(server))
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(answer.headers["content-length"] == "\(Self.exposition.utf8.count)")
        #expect(answer.headers["connection"] == "close")
        #expect(answer.body == Self.exposition)
        #expect(try PrometheusExposition(parsing: answer.body).value("sonora_up") == 1)
        // A query string and HTTP/1.0 are fine; LF-only line ends too.
        #expect(try Self.get(server, "GET /metrics?x=1 HTTP/1.0\n\n")?.status == 200)
        let head = try #require(try Self.get(server, "HEAD /metrics HTTP/1.1\r\n\r\n"))
        #expect(head.status == 200 && head.body.isEmpty)
    }

    @Test("IPv6 loopback is served too")
    func ipv6() throws {
        let server = try Self.server(host: "::1")
        defer { server.stop() }
        #expect(try Self.get(server)?.status == 200)
        #expect(server.url == "http://[::1]:\(server.port)/metrics")
    }

    @Test("other paths, methods and garbage get 404, 405 and 400")
    func refusals() throws {
        let server = try Self.server()
        defer { server.stop() }
        #expect(try Self.get(server, "GET / HTTP/1.1\r\n\r\n")?.status == 404)
        let post = try #require(try Self.get(server, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"))
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
        #expect(try Self.get(server, "\u{1}\u{2}garbage\r\n\r\n")?.status == 400)
        #expect(try Self.get(server, "GET /metrics SPDY/9\r\n\r\n")?.status == 400)
        #expect(server.statistics.refused == 4)
    }

    @Test("a request head over the limit gets 431 and is not read further")
    func hugeRequest() throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try MetricsTCPClient(port: server.port)
        client.send("GET /metrics HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 4000))
        let answer = try #require(client.readToEnd().flatMap(MetricsHTTPAnswer.init))
        #expect(answer.status == 431)
        // The server is still there for the next one.
        #expect(try Self.get(server)?.status == 200)
    }

    @Test("non-loopback and malformed addresses are refused by the server itself")
    func refusesNonLoopback() {
        for host in ["0.0.0.0", "::", "10.0.0.1", "localhost", "nonsense"] {
            #expect(throws: MetricsServerError.self, "\(host)") {
                try MetricsHTTPServer(host: host, port: 0, logger: Logger(label: "test")) { "" }
            }
        }
    }

    @Test("a slowloris client is closed at its deadline while others are served")
    func slowloris() throws {
        let server = try Self.server(timeout: 0.5)
        defer { server.stop() }
        let slow = try MetricsTCPClient(port: server.port)
        // A byte at a time, never finishing the head: the deadline is counted from connecting.
        var closedEarly = false
        for byte in Array("GET /metrics HTTP/1.1\r\nX-Slow: ".utf8) {
            if !slow.send([byte]) { closedEarly = true; break }
            #expect(try Self.get(server)?.status == 200, "a normal scrape while the slow client dribbles")
            usleep(50_000)
        }
        // Whatever it was sent last, the slow client ends up closed without an answer.
        let rest = slow.readToEnd()
        #expect(rest == "" || closedEarly)
        #expect(server.statistics.timedOut >= 1)
    }

    @Test("many idle connections cannot lock a scraper out: the oldest are closed")
    func manyConnections() throws {
        let renders = Renders()
        let server = try Self.server(maximumClients: 8, renders: renders)
        defer { server.stop() }
        var idle: [MetricsTCPClient] = []
        for _ in 0..<100 { idle.append(try MetricsTCPClient(port: server.port)) }
        let answer = try #require(try Self.get(server))
        #expect(answer.status == 200)
        let statistics = server.statistics
        #expect(statistics.evicted >= 100 - 8)
        #expect(statistics.clients <= 8)
        #expect(renders.count.load(ordering: .relaxed) == 1)
        idle.removeAll()
    }

    @Test("a client that never reads its answer is dropped at the deadline")
    func nonReader() throws {
        // 16 MB: more than the socket buffers hold, so the server must wait for the reader.
        let big = String(repeating: "sonora_pad 1\n", count: 16 << 20 / 13)
        let server = try Self.server(timeout: 0.3, body: big)
        defer { server.stop() }
        let client = try MetricsTCPClient(port: server.port)
        client.send("GET /metrics HTTP/1.1\r\n\r\n")
        var waited = 0
        while server.statistics.timedOut == 0 && waited < 1000 { usleep(10_000); waited += 1 }
        #expect(server.statistics.timedOut == 1)
        #expect(server.statistics.clients == 0)
        // Meanwhile and after, others are served.
        #expect(try Self.get(server)?.status == 200)
    }
}
