import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private JACK2 server on the dummy backend (no sound card), under a name of its own
/// (`sonora-test-PID-N`) so parallel runs and other servers never meet it. A killed
/// server leaves its socket and semaphores in /dev/shm, which block a restart under the
/// same name: `kill()` removes exactly those files (named after this server), nothing else.
public final class JACKTestServer: @unchecked Sendable {
    /// jackd is installed and we may run it (root: the dummy backend needs no device, but
    /// /dev/shm clean-up and mlock do).
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") && FileManager.default.isExecutableFile(atPath: "/usr/bin/jack_lsp") && getuid() == 0
    }

    private static let counter = Counter()
    public let name: String
    /// The rate the server runs (or last ran) at; `start(rate:)` restarts it at another.
    public private(set) var rate: Int
    public let period: Int
    private var process: Process?
    private let log: String

    /// Starts `jackd -n NAME -d dummy -r RATE -p PERIOD` and waits until it answers.
    public init(rate: Int = 48000, period: Int = 256) throws {
        name = "sonora-test-\(getpid())-\(Self.counter.next())"
        self.rate = rate
        self.period = period
        log = NSTemporaryDirectory() + "/\(name).log"
        try start()
    }

    deinit { stop(signal: SIGTERM) }

    /// Environment for children that must find only this server.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_START_SERVER"] = "1"
        environment["JACK_DEFAULT_SERVER"] = name
        return environment
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server again (after `kill()`) under the same name at another rate: to a
    /// client that re-attaches, the server changed its rate (the dummy backend cannot live).
    public func start(rate newRate: Int) throws {
        rate = newRate
        try start()
    }

    /// Starts the server (again, after `kill()`), and waits until `jack_lsp` reaches it.
    public func start() throws {
        let jackd = Process()
        jackd.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
        jackd.arguments = ["-n", name, "--no-realtime", "-d", "dummy", "-r", "\(rate)", "-p", "\(period)"]
        var environment = self.environment
        environment["JACK_NO_AUDIO_RESERVATION"] = "1"
        jackd.environment = environment
        FileManager.default.createFile(atPath: log, contents: nil)
        let output = FileHandle(forWritingAtPath: log)
        jackd.standardOutput = output
        jackd.standardError = output
        try jackd.run()
        process = jackd
        for _ in 0..<200 {
            if answers() { return }
            guard jackd.isRunning else { break }
            usleep(25_000)
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        stop(signal: SIGKILL)
        // JACK's server registry (/dev/shm/jack-shm-registry, 8 slots) keeps a killed server's
        // entry until a server of the same name starts again: killed test servers (a crash
        // test, an interrupted run) fill it. With no jackd alive nothing uses it: start afresh.
        if text.contains("Too many servers already active") && !reclaimedRegistry && !Self.anyJackdAlive() {
            reclaimedRegistry = true
            unlink("/dev/shm/jack-shm-registry")
            return try start()
        }
        throw TestServerError("jackd -n \(name) did not start: \(text.suffix(400))")
    }

    private var reclaimedRegistry = false

    /// Whether any jackd process runs on this machine (its /proc/PID/comm).
    private static func anyJackdAlive() -> Bool {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.contains { entry in
            guard Int(entry) != nil, let comm = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8) else { return false }
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == "jackd"
        }
    }

    /// Kills the server with SIGKILL (as a crash would) and clears what it left behind.
    public func kill() { stop(signal: SIGKILL) }

    /// Runs a JACK tool against this server and returns its stdout (e.g. `jack_lsp -l`).
    public func tool(_ name: String, _ arguments: [String]) -> String {
        let tool = Process()
        // Through coreutils' timeout: a tool talking to a wedged server would wait forever.
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        tool.arguments = ["10", "/usr/bin/\(name)"] + arguments  // (the server through JACK_DEFAULT_SERVER: not every tool takes -s)
        tool.environment = environment
        let pipe = Pipe()
        tool.standardOutput = pipe
        tool.standardError = FileHandle.nullDevice
        guard (try? tool.run()) != nil else { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        tool.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private func answers() -> Bool {
        tool("jack_lsp", []).contains("system:playback_1")
    }

    private func stop(signal: Int32) {
        guard let process else { return }
        // Bounded: a wedged jackd ignores SIGTERM (then SIGKILL after 5 s).
        process.stop(signal: signal, grace: 5)
        self.process = nil
        // What jackd keeps in /dev/shm under this server's name (its socket and semaphores).
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? []
        for file in files where file.hasPrefix("jack_\(name)_") || file.hasPrefix("jack_sem.\(getuid())_\(name)_") {
            try? FileManager.default.removeItem(atPath: "/dev/shm/\(file)")
        }
        if signal == SIGTERM { try? FileManager.default.removeItem(atPath: log) }
    }

    private final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func next() -> Int { lock.withLock { value += 1; return value } }
    }
}

public struct TestServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
