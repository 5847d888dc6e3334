import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a finished command left: its exit status and everything it printed.
public struct CLIOutcome: Sendable {
    /// The exit status, or 128 + the signal's number if a signal ended it (as a shell says).
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// The signal that ended the process, if one did.
    public var signal: Int32?
    /// True if the runner killed it because it outlived its timeout.
    public var timedOut: Bool
}

/// Runs a command-line program — the built `sonora` (`CLIRunner.sonora`) or any tool — the
/// way a script would: arguments, optional stdin and environment, stdout and stderr
/// captured in full (read concurrently, so a chatty child never blocks on a full pipe),
/// and a timeout after which the child is killed, so a hung command fails its test
/// instead of hanging the suite.
public struct CLIRunner: Sendable {
    public let executable: String
    /// Seconds a `run` may take before the child is killed (SIGKILL) and the outcome says so.
    public var timeout: Double

    public init(executable: String, timeout: Double = 300) {
        self.executable = executable
        self.timeout = timeout
    }

    /// The `sonora` binary built with the tests; nil if it was not built.
    public static let sonoraBinary: String? = PackageRoot.builtProduct("sonora").flatMap {
        FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil
    }

    /// A runner for the built `sonora`; nil if it was not built (gate suites on it).
    public static let sonora: CLIRunner? = sonoraBinary.map { CLIRunner(executable: $0) }

    /// Runs to the end (or the timeout). `environment` nil inherits this process's; stdin
    /// is `stdin`'s bytes, else empty (never the test runner's own stdin).
    public func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> CLIOutcome {
        let child = try launch(arguments, stdin: stdin, environment: environment)
        return child.wait(timeout: timeout)
    }

    public func run(_ arguments: String...) throws -> CLIOutcome { try run(arguments) }

    /// Starts the program and returns at once, for long-running commands a test talks to,
    /// signals and then waits for. The child is killed if the handle goes away first.
    public func launch(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> RunningCommand {
        try RunningCommand(executable: executable, arguments: arguments, stdin: stdin, environment: environment)
    }
}

/// A command started by `CLIRunner.launch`: send it signals, then `wait` for its outcome.
public final class RunningCommand: @unchecked Sendable {
    private let process = Process()
    private let output = Collected()
    private let errors = Collected()
    private let readers = DispatchGroup()
    private let exited = DispatchSemaphore(value: 0)
    private let state = Mutex<(timedOut: Bool, outcome: CLIOutcome?)>((false, nil))

    fileprivate init(executable: String, arguments: [String], stdin: Data?, environment: [String: String]?) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = stdin.map { _ in Pipe() }
        process.standardInput = input ?? FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // A thread of its own per pipe, not a work item on Dispatch's global queue: the reads
        // block for the child's whole life, and with many children running (32 clients of one
        // appliance) they held every pool thread, so the next command's readers waited for the
        // pool to grow — about a second each — and a test of 32 programs took a minute.
        for (pipe, sink) in [(out, output), (err, errors)] {
            readers.enter()
            Thread { [readers] in
                while case let chunk = pipe.fileHandleForReading.availableData, !chunk.isEmpty { sink.append(chunk) }
                readers.leave()
            }.start()
        }
        if let input, let stdin {
            Thread {
                try? input.fileHandleForWriting.write(contentsOf: stdin)
                try? input.fileHandleForWriting.close()
            }.start()
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var processIdentifier: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` (SIGTERM, SIGHUP, SIGKILL …) to the child.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool { kill(process.processIdentifier, signal) == 0 }

    /// Waits for the child to end (killing it after `timeout` seconds) and returns what it left.
    public func wait(timeout: Double = 300) -> CLIOutcome {
        if let done = state.withLock({ $0.outcome }) { return done }
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            state.withLock { $0.timedOut = true }
            kill(process.processIdentifier, SIGKILL)
            kill(-process.processIdentifier, SIGKILL)  // its process group, if it leads one
            exited.wait()
        }
        process.waitUntilExit()
        // A grandchild may still hold the pipes open: after a timeout, take what came so far.
        if timedOut { _ = readers.wait(timeout: .now() + 2) } else { readers.wait() }
        let bySignal = process.terminationReason == .uncaughtSignal
        let outcome = CLIOutcome(
            status: bySignal ? 128 + process.terminationStatus : process.terminationStatus,
            stdout: String(decoding: output.data, as: UTF8.self),
            stderr: String(decoding: errors.data, as: UTF8.self),
            signal: bySignal ? process.terminationStatus : nil,
            timedOut: state.withLock { $0.timedOut })
        state.withLock { $0.outcome = outcome }
        return outcome
    }

    /// One pipe's bytes so far, appended by its reader.
    private final class Collected: Sendable {
        private let bytes = Mutex(Data())
        func append(_ chunk: Data) { bytes.withLock { $0.append(chunk) } }
        var data: Data { bytes.withLock { $0 } }
    }
}
