import Foundation
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for systemd's notify socket: a datagram socket the test binds (a path, or an
/// abstract `@` name) and hands to `sonora run` as NOTIFY_SOCKET; a thread keeps every
/// message that arrives, in order.
final class FakeNotifySocket: @unchecked Sendable {
    /// What NOTIFY_SOCKET says.
    let name: String
    private let descriptor: Int32
    private let received = Mutex<[String]>([])
    private let running = Atomic<Bool>(true)
    private var reader: Thread?

    init(name: String) throws {
        self.name = name
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var bytes = Array(name.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 } else { bytes.append(0) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard descriptor >= 0, bound == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: name]) }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while running.load(ordering: .relaxed) {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count > 0 {
                    let message = String(decoding: buffer[0..<count], as: UTF8.self)
                    received.withLock { $0.append(message) }
                }
            }
        }
        reader = thread
        thread.start()
    }

    deinit {
        running.store(false, ordering: .relaxed)
        usleep(100_000)
        close(descriptor)
        if name.hasPrefix("/") { unlink(name) }
    }

    var messages: [String] { received.withLock { $0 } }

    /// Messages carrying the assignment `line` (eg. "WATCHDOG=1").
    func count(_ line: String) -> Int { messages.filter { $0.split(separator: "\n").contains(Substring(line)) }.count }

    /// Waits (at most `timeout` s) until `condition` holds over the messages so far.
    @discardableResult
    func wait(timeout: Double = 30, until condition: ([String]) -> Bool) -> Bool {
        let limit = Date().addingTimeInterval(timeout)
        while Date() < limit {
            if condition(messages) { return true }
            usleep(20_000)
        }
        return condition(messages)
    }
}

@Suite("sonora run under a supervisor (systemd's notify protocol)", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct ServiceNotifyCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-service")
    var folder: String { scratch.path }

    func config(device: String, socket: String? = nil) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        device: {playback: \(device)}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
          - {id: meter, kind: Meter}
        connections:
          - {from: tone, to: meter}
          - {from: meter, to: output}
        status: {interval: 0.2}
        \(socket.map { "control: {socket: \($0)}" } ?? "")
        """
    }

    func environment(_ notify: FakeNotifySocket, watchdogMicroseconds: Int? = nil, extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.name
        environment["WATCHDOG_USEC"] = watchdogMicroseconds.map(String.init)
        environment.removeValue(forKey: "WATCHDOG_PID")
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    @Test("on the null device: READY=1 first, then STATUS= lines and watchdog pings; SIGHUP is RELOADING=1 then READY=1; SIGTERM says STOPPING=1; stderr is journald's format")
    func notifiesOnNullDevice() throws {
        let notify = try FakeNotifySocket(name: folder + "/notify.sock")
        let path = folder + "/service.yaml"
        try config(device: "\"null\"").write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: sonoraBinary!).launch(["run", path], environment: environment(notify, watchdogMicroseconds: 400_000))
        #expect(notify.wait { $0.contains { $0.contains("READY=1") } }, "no READY=1: \(notify.messages)")
        #expect(notify.wait { messages in messages.filter { $0 == "WATCHDOG=1" }.count >= 3 && messages.contains { $0.hasPrefix("STATUS=status: ") } },
                "\(notify.messages)")
        let beforeReady = notify.messages.prefix { !$0.contains("READY=1") }
        #expect(beforeReady.allSatisfy { !$0.contains("WATCHDOG=1") }, "a ping before READY=1: \(notify.messages)")
        #expect(notify.messages.first { $0.contains("READY=1") }?.contains("STATUS=running \(path) on the null device") == true, "\(notify.messages)")
        let status = notify.messages.first { $0.hasPrefix("STATUS=status: ") } ?? ""
        #expect(status.contains("cycles") && !status.contains("\n"), "\(status)")

        // A reload: RELOADING=1 (with the monotonic time), then READY=1 again.
        let seen = notify.messages.count
        run.signal(SIGHUP)
        #expect(notify.wait { Array($0.dropFirst(seen)).contains { $0.contains("READY=1") } }, "\(notify.messages.dropFirst(seen))")
        let reload = Array(notify.messages.dropFirst(seen)).filter { !$0.hasPrefix("WATCHDOG") && !$0.hasPrefix("STATUS=status") }
        #expect(reload.first?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true && reload.dropFirst().first?.hasPrefix("READY=1\nSTATUS=reloaded") == true, "\(reload)")

        run.signal(SIGTERM)
        let outcome = run.wait(timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(notify.messages.last?.hasPrefix("STOPPING=1\nSTATUS=SIGTERM") == true, "\(notify.messages.suffix(3))")
        // stderr is a pipe here: every log line starts with a syslog priority, no escapes.
        let lines = outcome.stderr.split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { $0.range(of: #"^<[0-7]>"#, options: .regularExpression) != nil }, "\(outcome.stderr)")
        #expect(lines.contains { $0.hasPrefix("<6>running ") } && !outcome.stderr.contains("\u{1B}"), "\(outcome.stderr)")
    }

    @Test("an abstract NOTIFY_SOCKET (@name) works, and a reload over the control socket is wrapped in RELOADING=1 … READY=1 too")
    func abstractSocketAndControlReload() throws {
        let name = "@sonora-notify-test-\(getpid())"
        let notify = try FakeNotifySocket(name: name)
        let control = "/tmp/sonora-svc-\(getpid()).sock"
        let path = folder + "/abstract.yaml"
        try config(device: "\"null\"", socket: control).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: sonoraBinary!).launch(["run", path, "--log-format", "plain"], environment: environment(notify))
        #expect(notify.wait { $0.contains { $0.contains("READY=1") } }, "no READY=1 on \(name): \(notify.messages)")
        let seen = notify.messages.count
        let answer = try CLIRunner(executable: sonoraBinary!).run(["ctl", "--socket", control, "reload"])
        #expect(answer.status == 0, "\(answer.stderr)")
        #expect(notify.wait { Array($0.dropFirst(seen)).contains { $0.contains("READY=1") } })
        let reload = Array(notify.messages.dropFirst(seen)).filter { !$0.hasPrefix("STATUS=status") }
        #expect(reload.first?.hasPrefix("RELOADING=1") == true && reload.dropFirst().first == "READY=1\nSTATUS=reloaded over the control socket", "\(reload)")
        #expect(notify.count("WATCHDOG=1") == 0, "no WATCHDOG_USEC, no pings")
        run.signal(SIGINT)
        let outcome = run.wait(timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        // --log-format plain keeps swift-log's timestamped lines even though stderr is a pipe.
        #expect(!outcome.stderr.hasPrefix("<") && outcome.stderr.contains(" info sonora.run"), "\(outcome.stderr)")
    }

    @Test("READY=1 waits for the first I/O cycle, not for the process or its control socket: a device stalled from the start gets no READY=1 until it runs")
    func readyWaitsForTheFirstCycle() throws {
        let unplugFolder = folder + "/loop"
        try FileManager.default.createDirectory(atPath: unplugFolder, withIntermediateDirectories: true)
        let loop = "ready\(getpid())"
        let stall = unplugFolder + "/" + loop + ".stall"
        FileManager.default.createFile(atPath: stall, contents: nil)
        let notify = try FakeNotifySocket(name: folder + "/notify.sock")
        let control = "/tmp/sonora-svr-\(getpid()).sock"
        let path = folder + "/ready.yaml"
        try config(device: "\"sonoraloop:\(loop)\"", socket: control).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: sonoraBinary!).launch(
            ["run", path], environment: environment(notify, watchdogMicroseconds: 400_000, extra: ["SONORALOOP_UNPLUG_DIR": unplugFolder]))
        // The control socket answers (the process is up, its device opened), with no cycle done.
        var answered: [String: Any] = [:]
        for _ in 0..<400 where run.isRunning {
            answered = json(controlExchange(control, "{\"cmd\":\"status\"}\n"))
            if answered["ok"] as? Bool == true { break }
            usleep(25_000)
        }
        let cycles = (answered["status"] as? [String: Any])?["cycles"] as? Int
        #expect(cycles == 0, "\(answered)")
        usleep(1_000_000)
        #expect(!notify.messages.contains { $0.contains("READY=1") || $0.contains("WATCHDOG=1") }, "\(notify.messages)")
        try FileManager.default.removeItem(atPath: stall)
        #expect(notify.wait { $0.contains { $0.contains("READY=1") } }, "no READY=1 once the device ran: \(notify.messages)")
        run.signal(SIGTERM)
        #expect(run.wait(timeout: 60).status == 0)
    }

    @Test("a stuck I/O thread (the loopback driver blocks in poll) stops the watchdog pings; they come back when it runs again, and a vanished device being re-opened keeps them going")
    func stuckIOThreadStopsPings() throws {
        let control = folder + "/loop"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        let loop = "svc\(getpid())"
        let notify = try FakeNotifySocket(name: folder + "/notify.sock")
        let path = folder + "/stuck.yaml"
        try config(device: "\"sonoraloop:\(loop)\"").write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: sonoraBinary!).launch(
            ["run", path], environment: environment(notify, watchdogMicroseconds: 400_000, extra: ["SONORALOOP_UNPLUG_DIR": control]))
        #expect(notify.wait { $0.contains { $0.contains("READY=1") } }, "no READY=1: \(notify.messages)")
        #expect(notify.wait { $0.filter { $0 == "WATCHDOG=1" }.count >= 3 }, "\(notify.messages)")

        // Stalled: the I/O thread blocks inside the driver. After a settling second, a
        // window of ten ping intervals passes without a single ping.
        let stall = control + "/" + loop + ".stall"
        FileManager.default.createFile(atPath: stall, contents: nil)
        usleep(1_500_000)
        let pingsBefore = notify.count("WATCHDOG=1")
        usleep(2_000_000)
        #expect(notify.count("WATCHDOG=1") == pingsBefore, "pings while the I/O thread was stuck: \(notify.messages.suffix(12))")
        #expect(run.isRunning)

        // Released: the thread goes on (through an xrun) and the pings resume.
        try FileManager.default.removeItem(atPath: stall)
        #expect(notify.wait { $0.filter { $0 == "WATCHDOG=1" }.count >= pingsBefore + 3 }, "no pings after the stall: \(notify.messages.suffix(12))")

        // Unplugged: the I/O thread idles while the driver re-opens with back-off; that is
        // recovery, not a hang, so the pings go on.
        let unplug = control + "/" + loop
        FileManager.default.createFile(atPath: unplug, contents: nil)
        usleep(1_000_000)
        let pingsUnplugged = notify.count("WATCHDOG=1")
        usleep(1_500_000)
        #expect(notify.count("WATCHDOG=1") > pingsUnplugged, "the pings stopped while the device was being re-opened: \(notify.messages.suffix(12))")
        try FileManager.default.removeItem(atPath: unplug)
        // The driver re-opens with back-off (50 ms, doubling): back well within three seconds.
        usleep(3_000_000)

        run.signal(SIGTERM)
        let outcome = run.wait(timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("device back after"), "\(outcome.stderr)")
    }
}
