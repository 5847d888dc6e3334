import Foundation
import Logging
import SonoraPipeline
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif


private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { return }
        offset += sent
    }
}

/// The next answer line on `fd` (nil: closed, or nothing within 5 s).
private func readLine(_ fd: Int32) -> [String: Any]? {
    var time = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while recv(fd, &byte, 1, 0) == 1 {
        if byte == 10 { return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] }
        bytes.append(byte)
    }
    return nil
}

/// Waits (bounded) until the server's counts satisfy `condition`.
private func eventually(_ server: ControlServer, _ condition: (ControlServer.Statistics) -> Bool) -> ControlServer.Statistics {
    for _ in 0..<500 {
        if condition(server.statistics) { break }
        usleep(10_000)
    }
    return server.statistics
}

@Suite("ControlServer: one event loop, bounded clients", .serialized)
struct ControlServerTests {
    let logger = Logger(label: "test")

    func makeServer(timeout: Double = 30, clients: Int = 64) throws -> ControlServer {
        let server = try ControlServer(path: socketFolder() + "/c.sock", timeout: timeout, maximumClients: clients, logger: logger) { request in
            request == .status ? .version(.current) : .failure(ControlFailure(.failed, "only status here"))
        }
        server.start()
        return server
    }

    @Test("requests in one write, in pieces, pipelined, and a last line without newline are all answered")
    func framing() throws {
        let server = try makeServer()
        defer { server.stop() }
        let fd = try #require(UnixSocket.connect(server.path))
        defer { close(fd) }
        sendAll(fd, Array(#"{"cmd":"status"}"#.utf8) + [10])
        #expect(readLine(fd)?["ok"] as? Bool == true)
        sendAll(fd, Array(#"{"cmd":"st"#.utf8))
        usleep(20_000)
        sendAll(fd, Array(#"atus"}"#.utf8) + [10, 10, 32, 10] + Array(#"{"cmd":"status"}"#.utf8) + [10] + Array("{bad".utf8) + [10])
        #expect(readLine(fd)?["ok"] as? Bool == true)
        #expect(readLine(fd)?["ok"] as? Bool == true)
        #expect(readLine(fd)?["code"] as? String == "malformed-json")
        sendAll(fd, Array(#"{"cmd":"status"}"#.utf8))
        shutdown(fd, Int32(SHUT_WR))
        #expect(readLine(fd)?["ok"] as? Bool == true)
        #expect(readLine(fd) == nil)
        #expect(eventually(server) { $0.clients == 0 }.clients == 0)
    }

    @Test("buffers are bounded per client and released: 10 clients each 60 KB into a request")
    func boundedMemory() throws {
        let server = try makeServer()
        defer { server.stop() }
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        let partial = Array(#"{"cmd":"status","pad":""#.utf8) + [UInt8](repeating: 120, count: 60_000)
        for _ in 0..<10 {
            let fd = try #require(UnixSocket.connect(server.path))
            sendAll(fd, partial)
            clients.append(fd)
        }
        let full = eventually(server) { $0.bufferedBytes >= 10 * 60_000 }
        #expect(full.clients == 10)
        #expect(full.bufferedBytes >= 10 * 60_000)
        // At most one request line and one read per client (64 KiB + 16 KiB, doubled by
        // array growth at worst).
        #expect(full.bufferedBytes <= 10 * 2 * (65_536 + 16_384), "\(full.bufferedBytes) bytes for 10 clients")
        // Past the limit: an error, the client closed, its buffer gone.
        sendAll(clients[0], [UInt8](repeating: 120, count: 10_000))
        #expect(readLine(clients[0])?["code"] as? String == "too-long")
        let after = eventually(server) { $0.clients == 9 }
        #expect(after.clients == 9 && after.bufferedBytes < full.bufferedBytes)
        // A completed request leaves nothing behind.
        sendAll(clients[1], Array(#""}"#.utf8) + [10])
        #expect(readLine(clients[1])?["code"] as? String == "unknown-field")
        #expect(eventually(server) { $0.bufferedBytes <= 8 * 2 * (65_536 + 16_384) }.bufferedBytes <= 8 * 2 * (65_536 + 16_384))
    }

    @Test("at the client limit the oldest idle client makes room; clients with a request in progress are kept")
    func eviction() throws {
        let server = try makeServer(clients: 4)
        defer { server.stop() }
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        for index in 0..<4 {
            let fd = try #require(UnixSocket.connect(server.path))
            clients.append(fd)
            // The first client is part-way into a request; the others are idle.
            if index == 0 { sendAll(fd, Array(#"{"cmd":"#.utf8)) }
            _ = eventually(server) { $0.clients == index + 1 }
        }
        let late = try #require(UnixSocket.connect(server.path))
        defer { close(late) }
        sendAll(late, Array(#"{"cmd":"status"}"#.utf8) + [10])
        #expect(readLine(late)?["ok"] as? Bool == true)
        // Client 1 was the oldest idle one; client 0 (mid-request) is still served.
        #expect(readLine(clients[1])?["code"] as? String == "busy")
        sendAll(clients[0], Array(#""status"}"#.utf8) + [10])
        #expect(readLine(clients[0])?["ok"] as? Bool == true)
        #expect(server.statistics.evicted == 1)
    }

    @Test("when every client has a request in progress, a new one is told busy and the others are answered")
    func busy() throws {
        let gate = DispatchSemaphore(value: 0)
        let server = try ControlServer(path: socketFolder() + "/b.sock", timeout: 30, maximumClients: 2, logger: logger) { _ in
            gate.wait()
            return .reloaded
        }
        server.start()
        defer { server.stop() }
        let first = try #require(UnixSocket.connect(server.path)), second = try #require(UnixSocket.connect(server.path))
        defer { close(first); close(second) }
        sendAll(first, Array(#"{"cmd":"reload"}"#.utf8) + [10])
        sendAll(second, Array(#"{"cmd":"reload"}"#.utf8) + [10])
        _ = eventually(server) { $0.requests == 2 }
        let third = try #require(UnixSocket.connect(server.path))
        defer { close(third) }
        #expect(readLine(third)?["code"] as? String == "busy")
        gate.signal()
        gate.signal()
        #expect(readLine(first)?["ok"] as? Bool == true)
        #expect(readLine(second)?["ok"] as? Bool == true)
        #expect(server.statistics.evicted == 0)
    }

    @Test("a silent client and a trickling one are closed at their deadline")
    func deadlines() throws {
        let server = try makeServer(timeout: 0.5)
        defer { server.stop() }
        let silent = try #require(UnixSocket.connect(server.path))
        defer { close(silent) }
        let answer = readLine(silent)
        #expect(answer?["code"] as? String == "timeout" && (answer?["error"] as? String)?.contains("timed out") == true)
        let trickle = try #require(UnixSocket.connect(server.path))
        defer { close(trickle) }
        var sent = 0
        for byte in Array(#"{"cmd":"status"}"#.utf8) {
            var value = byte
            guard send(trickle, &value, 1, Int32(MSG_NOSIGNAL)) == 1 else { break }
            sent += 1
            usleep(150_000)
        }
        #expect(readLine(trickle)?["code"] as? String == "timeout")
        #expect(sent < 16, "the request was read past its deadline")
        #expect(server.statistics.timedOut == 2)
    }

    @Test("no thread per client: 64 connected clients add no threads")
    func threads() throws {
        let server = try makeServer()
        defer { server.stop() }
        func threadCount() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        let before = threadCount()
        for _ in 0..<64 { if let fd = UnixSocket.connect(server.path) { clients.append(fd) } }
        #expect(eventually(server) { $0.clients == 64 }.clients == 64)
        let after = threadCount()
        // Other suites may start threads meanwhile; 64 clients must not add 64.
        #expect(after - before < 16, "threads \(before) → \(after)")
    }
}
