import Foundation
import SonoraCore
import SonoraHAL

#if canImport(Glibc)
import Glibc
#endif

/// One appliance for `sonora-bench server`: `sonora run CONFIG` (the binary beside
/// sonora-bench) with a session section on a private socket and a control socket, spawned,
/// watched and stopped. Its config is written by the caller (`clients` node and device);
/// this adds the sockets.
final class ServerBenchAppliance {
    let folder: String
    let sessionSocket: String
    let controlSocket: String
    private let process = Process()
    private let log: String

    /// The `sonora` binary beside this one.
    static var sonoraBinary: String? {
        guard let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("sonora").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Starts `sonora run` on `config` (engine, device, nodes, connections) plus the two
    /// sockets, and waits (at most 20 s) until its session socket answers.
    init(name: String, config: String) throws {
        guard let sonora = Self.sonoraBinary else {
            throw AudioError(.unspecified, "the sonora binary is not built beside sonora-bench (swift build -c release --product sonora)")
        }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-\(name)-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Short paths: a Unix socket's path has at most 107 bytes.
        sessionSocket = "/tmp/sonora-bench-\(getpid())-\(name).sock"
        controlSocket = "/tmp/sonora-bench-\(getpid())-\(name).ctl"
        log = folder + "/appliance.log"
        let file = folder + "/appliance.yaml"
        try (config + "control: {socket: \(controlSocket)}\nsession: {socket: \(sessionSocket)}\n").write(toFile: file, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: sonora)
        process.arguments = ["run", file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        // `while`, not `for … where`: a `where` clause is evaluated on every one of the
        // iterations (it filters, it does not stop), so each wait would run to its limit.
        var waits = 0
        while waits < 800, process.isRunning, !isApplianceRunning(path: sessionSocket) { usleep(25_000); waits += 1 }
        guard process.isRunning, isApplianceRunning(path: sessionSocket) else {
            let reason = lastLogLine ?? "its session socket did not answer within 20 s"
            stop()
            throw AudioError(.unspecified, "the appliance (sonora run) did not start: \(reason)")
        }
        // Its socket listens before its device runs: wait for the first cycles too.
        waits = 0
        while waits < 200, process.isRunning, ((try? status())?.cycles ?? 0) == 0 { usleep(25_000); waits += 1 }
    }

    deinit { stop() }

    var pid: pid_t { process.processIdentifier }

    /// The last line it logged that is not a status line (why it stopped, when it did).
    var lastLogLine: String? {
        (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").last { !$0.hasPrefix("status:") }.map(String.init)
    }

    var isRunning: Bool { process.isRunning }

    /// Stops it (SIGTERM, then SIGKILL after 10 s) and removes its folder.
    func stop() {
        if process.isRunning {
            process.terminate()
            for _ in 0..<400 where process.isRunning { usleep(25_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
        unlink(sessionSocket)
        unlink(controlSocket)
    }

    /// One reading of every thread of the appliance: its id, name and CPU seconds run so far
    /// (`/proc/PID/task/*/schedstat`, nanoseconds).
    struct ThreadReading {
        var name: String
        var seconds: Double
    }

    func threadCPUSeconds() -> [Int: ThreadReading] {
        var threads: [Int: ThreadReading] = [:]
        let tasks = "/proc/\(pid)/task"
        for task in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let id = Int(task),
                  let name = try? String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8),
                  let stat = try? String(contentsOfFile: "\(tasks)/\(task)/schedstat", encoding: .utf8),
                  let nanoseconds = stat.split(separator: " ").first.flatMap({ Double($0) }) else { continue }
            threads[id] = ThreadReading(name: name.trimmingCharacters(in: .whitespacesAndNewlines), seconds: nanoseconds / 1e9)
        }
        return threads
    }

    /// CPU seconds each thread name ran between two readings, matched by thread id: a thread
    /// born in between counts from zero; one that ended in between is not counted (its time
    /// cannot be read any more) and its name is returned in `ended`. Matching by name alone
    /// made a pool's threads (Dispatch's `…-qos.overcommit`) read negative when one of them
    /// ended inside the window.
    static func threadCPUSeconds(from before: [Int: ThreadReading], to after: [Int: ThreadReading]) -> (byName: [String: Double], ended: [String]) {
        var byName: [String: Double] = [:]
        for (id, reading) in after {
            let start = before[id]?.seconds ?? 0
            byName[reading.name, default: 0] += reading.seconds - start
        }
        let ended = before.filter { after[$0.key] == nil }.map(\.value.name).sorted()
        return (byName, ended)
    }

    /// The appliance's device cycles and xruns (`sonora ctl status`).
    func status() throws -> (cycles: Int, xruns: Int) {
        let object = try control(["status"])
        guard let status = object["status"] as? [String: Any], let cycles = status["cycles"] as? Int, let xruns = status["xruns"] as? Int else {
            throw AudioError(.unspecified, "the appliance's status has no cycles/xruns")
        }
        return (cycles, xruns)
    }

    /// Playback streams the appliance's `clients` node lists (`sonora ctl nodes`).
    func playbackStreams() throws -> Int {
        let nodes = try control(["nodes"])["nodes"] as? [[String: Any]] ?? []
        let streams = nodes.first { $0["id"] as? String == "clients" }?["streams"] as? [[String: Any]] ?? []
        return streams.filter { $0["direction"] as? String == "playback" }.count
    }

    /// Waits (at most `timeout` s) until `count` playback streams are attached.
    func waitForPlaybackStreams(_ count: Int, timeout: Double) throws {
        let limit = HostTime.now.seconds + timeout
        var seen = 0
        while HostTime.now.seconds < limit {
            seen = try playbackStreams()
            if seen >= count { return }
            usleep(50_000)
        }
        throw AudioError(.unspecified, "only \(seen) of \(count) client streams attached to the appliance within \(Int(timeout)) s")
    }

    private func control(_ arguments: [String]) throws -> [String: Any] {
        guard let sonora = Self.sonoraBinary else { throw AudioError(.unspecified, "the sonora binary is not built beside sonora-bench") }
        let ctl = Process()
        ctl.executableURL = URL(fileURLWithPath: sonora)
        ctl.arguments = ["ctl", "--socket", controlSocket] + arguments + ["--json"]
        let output = Pipe()
        ctl.standardOutput = output
        ctl.standardError = FileHandle.nullDevice
        try ctl.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        ctl.waitUntilExit()
        guard ctl.terminationStatus == 0, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw AudioError(.unspecified, "sonora ctl \(arguments.joined(separator: " ")) failed (exit \(ctl.terminationStatus)); the appliance: \(lastLogLine ?? "no log")")
        }
        return object
    }
}
