import Foundation
import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// One appliance under soak: `sonora run` (the binary beside sonora-bench) on a pipeline
/// that plays a tone through a gain and a meter into a recorder, with a control socket;
/// the soak reloads it, talks to it, unplugs its device (sonoraloop) and reads its
/// process's resources from /proc.
final class SoakAppliance {
    let device: String
    let folder: String
    let configPath: String
    let recording: String
    let controlSocket: String
    /// `$SONORALOOP_UNPLUG_DIR/LOOP` for a sonoraloop device (nil: it cannot vanish).
    let unplugFile: String?
    let period = 256
    private let process = Process()
    private let log: String
    private var gainStep = 0

    /// `device` is "null" or "loopback" (sonoraloop, a loop of its own).
    init(device: String, root: String) throws {
        guard let sonora = ServerBenchAppliance.sonoraBinary else {
            throw AudioError(.unspecified, "the sonora binary is not built beside sonora-bench (swift build -c release --product sonora)")
        }
        self.device = device
        folder = root + "/" + device
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        configPath = folder + "/soak.yaml"
        recording = folder + "/soak.wav"
        controlSocket = "/tmp/sonora-soak-\(getpid())-\(device).sock"
        log = folder + "/appliance.log"
        var environment = ProcessInfo.processInfo.environment
        environment["MALLOC_ARENA_MAX"] = "1"
        if device == "loopback" {
            let unplugFolder = folder + "/unplug"
            try FileManager.default.createDirectory(atPath: unplugFolder, withIntermediateDirectories: true)
            environment["SONORALOOP_UNPLUG_DIR"] = unplugFolder
            unplugFile = unplugFolder + "/soak\(getpid())"
        } else {
            unplugFile = nil
        }
        try writeConfig()
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: sonora)
        process.arguments = ["run", configPath, "--log-format", "plain"]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        // `while`, not `for … where` (which asks on every one of the 800 iterations).
        var waits = 0
        while waits < 800, process.isRunning, ((try? status())?.cycles ?? 0) == 0 { usleep(25_000); waits += 1 }
        guard process.isRunning, ((try? status())?.cycles ?? 0) > 0 else {
            let reason = lastLogLine ?? "its control socket did not answer within 20 s"
            _ = stop()
            throw AudioError(.unspecified, "the \(device) appliance (sonora run) did not start: \(reason)")
        }
    }

    deinit { _ = stop() }

    var pid: pid_t { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    var lastLogLine: String? {
        (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").last.map(String.init)
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// The config, with the gain the next reload applies (a reload that changes something).
    func writeConfig() throws {
        let playback = device == "loopback" ? "\"sonoraloop:soak\(getpid())\"" : "\"null\""
        let gain = ["-6 dB", "-3 dB", "-9 dB"][gainStep % 3]
        gainStep += 1
        let text = """
            engine: {sample_rate: 48000, period: \(period), periods: 2, channels: 2}
            device: {playback: \(playback)}
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
              - {id: gain, kind: Gain, parameters: {gain: \(gain)}}
              - {id: meter, kind: Meter}
              - {id: rec, kind: recorder, file: \(recording)}
            connections:
              - {from: tone, to: gain}
              - {from: gain, to: meter}
              - {from: meter, to: rec}
              - {from: rec, to: output}
            control: {socket: \(controlSocket)}
            status: {interval: 1}

            """
        // Written in place (not renamed over): the appliance re-reads the same file.
        try text.write(toFile: configPath, atomically: false, encoding: .utf8)
    }

    struct Status {
        var cycles: Int
        var xruns: Int
        var interruptions: Int
        var running: Bool
    }

    func status() throws -> Status {
        let object = try request(#"{"cmd":"status"}"#)
        guard let status = object["status"] as? [String: Any], let cycles = status["cycles"] as? Int, let xruns = status["xruns"] as? Int else {
            throw AudioError(.unspecified, "the appliance's status has no cycles/xruns: \(object)")
        }
        return Status(cycles: cycles, xruns: xruns, interruptions: status["interruptions"] as? Int ?? 0, running: status["running"] as? Bool ?? false)
    }

    /// One request line over the control socket; its answer as a JSON object (throws on `ok: false`).
    @discardableResult
    func request(_ line: String) throws -> [String: Any] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AudioError(.unspecified, "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(controlSocket.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw AudioError(.unspecified, "\(controlSocket): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array((line + "\n").utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw AudioError(.unspecified, "send: \(String(cString: strerror(errno)))") }
        var answer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 8192)
        while !answer.contains(10) {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            answer += chunk[0..<count]
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.prefix { $0 != 10 })) as? [String: Any] else {
            throw AudioError(.unspecified, "no answer to \(line)")
        }
        if object["ok"] as? Bool == false { throw AudioError(.unspecified, "\(line): \(object["error"] ?? object)") }
        return object
    }

    /// Resident set (kB), open descriptors and threads of the appliance process.
    func resources() -> (rssKilobytes: Int, descriptors: Int, threads: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { line in
            line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        } ?? 0
        // The fewest of a few reads 20 ms apart: a control connection still being closed by
        // the server (the request before this sample) is not a descriptor the process keeps.
        var descriptors = Int.max
        for attempt in 0..<3 {
            if attempt > 0 { usleep(20_000) }
            descriptors = min(descriptors, (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0)
        }
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? 0
        return (rss, descriptors, threads)
    }

    /// Stops it (SIGTERM: fade, stop, finish the recording; SIGKILL after 20 s); its exit status.
    func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            for _ in 0..<800 where process.isRunning { usleep(25_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        if process.processIdentifier > 0 { process.waitUntilExit() }
        unlink(controlSocket)
        return process.processIdentifier > 0 ? process.terminationStatus : -1
    }
}
