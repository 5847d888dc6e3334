import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora ctl metrics` and the `metrics: {listen: …}` endpoint of a real `sonora run`.
@Suite("sonora ctl metrics and the /metrics endpoint", .serialized, .enabled(if: CLIRunner.sonora != nil, "the sonora binary is not built"))
struct MetricsCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-metrics-cli")
    var sonora: CLIRunner { CLIRunner(executable: CLIRunner.sonoraBinary!, timeout: 60) }

    /// A loopback port nobody listens on right now (the kernel's choice).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func config(socket: String, metrics: String?) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        device: {playback: "null"}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
          - {id: meter, kind: Meter}
        connections:
          - {from: tone, to: meter}
          - {from: meter, to: output}
        control: {socket: "\(socket)"}
        status: {interval: 0}

        """ + (metrics.map { "metrics: {listen: \"\($0)\"}\n" } ?? "")
    }

    /// Starts `sonora run` and waits until its control socket answers.
    func launch(_ text: String) throws -> (RunningCommand, socket: String) {
        let path = scratch.path("run-\(UInt32.random(in: 0...UInt32.max)).yaml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let socket = text.split(separator: "\"").first { $0.hasPrefix("/tmp/") }.map(String.init)!
        let process = try sonora.launch(["run", path])
        var waited = 0
        while process.isRunning && waited < 400, (try? sonora.run("ctl", "--socket", socket, "status"))?.status != 0 {
            usleep(50_000)
            waited += 1
        }
        return (process, socket)
    }

    /// The TCP sockets a process listens on (from /proc: its socket inodes in LISTEN state).
    static func listeningTCPSockets(of pid: Int32) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        var inodes = Set<String>()
        for fd in fds {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"), target.hasPrefix("socket:[") {
                inodes.insert(String(target.dropFirst(8).dropLast()))
            }
        }
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let rows = ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
            for row in rows {
                let fields = row.split(separator: " ")
                if fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])) { count += 1 }
            }
        }
        return count
    }

    @Test("ctl metrics and GET /metrics print the exposition; every line parses")
    func scrape() throws {
        let port = Self.freePort()
        let (process, socket) = try launch(config(socket: "/tmp/sonora-metrics-\(getpid()).sock", metrics: "127.0.0.1:\(port)"))
        defer {
            process.signal(SIGTERM)
            _ = process.wait(timeout: 60)
        }
        #expect(process.isRunning)
        let ctl = try sonora.run("ctl", "--socket", socket, "metrics")
        #expect(ctl.status == 0, "\(ctl.stderr)")
        let parsed = try PrometheusExposition(parsing: ctl.stdout)
        #expect(parsed.value("sonora_cycles_total") != nil)
        #expect(!parsed.samples("sonora_meter", ["node": "meter"]).isEmpty)
        #expect(parsed.value("sonora_wakeup_lateness_seconds", ["percentile": "99"]) != nil)

        let json = try sonora.run("ctl", "--socket", socket, "metrics", "--json")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["ok"] as? Bool == true)
        #expect((object?["metrics"] as? String)?.contains("# TYPE sonora_xruns_total counter") == true)

        let curl = try CLIRunner(executable: "/usr/bin/curl", timeout: 30).run(["-sS", "-i", "--max-time", "10", "http://127.0.0.1:\(port)/metrics"])
        #expect(curl.status == 0, "\(curl.stderr)")
        let parts = curl.stdout.components(separatedBy: "\r\n\r\n")
        #expect(parts.first?.hasPrefix("HTTP/1.1 200") == true)
        #expect(parts.first?.contains("Content-Type: text/plain; version=0.0.4") == true)
        let served = try PrometheusExposition(parsing: parts.dropFirst().joined(separator: "\r\n\r\n"))
        #expect(try #require(served.value("sonora_cycles_total")) >= 1)
        #expect(Self.listeningTCPSockets(of: process.processIdentifier) == 1)
    }

    @Test("without a metrics section the appliance listens on no TCP port")
    func noListenerByDefault() throws {
        let (process, socket) = try launch(config(socket: "/tmp/sonora-nometrics-\(getpid()).sock", metrics: nil))
        defer {
            process.signal(SIGTERM)
            _ = process.wait(timeout: 60)
        }
        #expect(process.isRunning)
        #expect(Self.listeningTCPSockets(of: process.processIdentifier) == 0)
        // ctl metrics works all the same.
        #expect(try sonora.run("ctl", "--socket", socket, "metrics").status == 0)
    }

    @Test("check and run refuse a non-loopback listen address at file:line:column")
    func refusesNonLoopback() throws {
        let path = scratch.path("open.yaml")
        try config(socket: "/tmp/sonora-open-\(getpid()).sock", metrics: "0.0.0.0:9464").write(toFile: path, atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let outcome = try sonora.run([command, path])
            #expect(outcome.status == 2, "\(command): \(outcome.stderr)")
            #expect(outcome.stderr.contains("\(path):11:19:") && outcome.stderr.contains("not a loopback address"), "\(command): \(outcome.stderr)")
        }
    }

    @Test("a taken port stops run with the reason, naming the config's line")
    func portTaken() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 1)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let path = scratch.path("taken.yaml")
        try config(socket: "/tmp/sonora-taken-\(getpid()).sock", metrics: "127.0.0.1:\(port)").write(toFile: path, atomically: true, encoding: .utf8)
        let outcome = try sonora.run(["run", path])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\(path):11:19") && outcome.stderr.contains("Address already in use"), "\(outcome.stderr)")
    }

    @Test("ctl --help lists metrics with an example")
    func help() throws {
        let outcome = try sonora.run("ctl", "--help")
        #expect(outcome.stdout.contains("metrics") && outcome.stdout.contains("Prometheus"))
    }
}
