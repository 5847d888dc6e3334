import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A private network for netjack2 tests (scripts/netjack-netns.sh): a master namespace
/// and slave namespaces on one bridge, addresses only inside them. Devices run in a
/// namespace by being opened and started on a thread that entered it (`setns` is per
/// thread; the threads a device starts inherit it).
final class NetJackRig: @unchecked Sendable {
    let prefix: String
    let subnet: Int
    let slaves: Int
    private var master: Process?
    let masterLog = TemporaryLog()

    /// Why namespaces cannot be made here (nil: they can), found once by making and removing one.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "network namespaces need root" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") else { return "jackd not installed (Debian: jackd2)" }
        let probe = NetJackRig(slaves: 1)
        let (status, output) = probe.script(["up", probe.prefix, "1", String(probe.subnet)])
        probe.tearDown()
        guard status == 0 else { return "cannot make network namespaces: \(output)" }
        return nil
    }()

    static var available: Bool {
        if let reason = unavailableReason {
            FileHandle.standardError.write(Data("NetJackNetworkTests skipped: \(reason)\n".utf8))
            return false
        }
        return true
    }

    private static let counter = Atomic<Int>(0)

    init(slaves: Int) {
        let serial = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        prefix = "snj\(getpid() % 100_000)x\(serial)"
        subnet = 20 + Int((getpid() &+ Int32(serial) &* 7) % 200)
        self.slaves = slaves
    }

    func up() throws {
        let (status, output) = script(["up", prefix, String(slaves), String(subnet)])
        guard status == 0 else { throw RigError("namespaces: \(output)") }
    }

    var masterAddress: String { "10.77.\(subnet).1" }

    /// Starts jackd (dummy backend) and its netmanager in the master namespace; it loops
    /// every slave's returned channels back to it, or (`crossed`) routes the first two
    /// slaves' returned channels into each other.
    func startJackMaster(rate: Int, period: Int, crossed: Bool = false) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PackageRoot.path("scripts/netjack-netns.sh"))
        process.arguments = ["master", prefix, String(rate), String(period)] + (crossed ? ["cross"] : [])
        process.standardOutput = masterLog.handle
        process.standardError = masterLog.handle
        try process.run()
        master = process
        guard waitFor(seconds: 15, { self.masterLog.text.contains("ready") }) else {
            throw RigError("jackd master did not start: \(masterLog.text)")
        }
    }

    /// Waits until the master looped `ports` of a slave's channels back.
    func waitForLoops(_ ports: Int, seconds: Double = 15) -> Bool {
        waitFor(seconds: seconds) { self.masterLog.text.components(separatedBy: "looped ").count - 1 >= ports }
    }

    /// Waits until the master crossed `ports` channels between two slaves (both directions).
    func waitForCrossings(_ ports: Int, seconds: Double = 15) -> Bool {
        waitFor(seconds: seconds) { self.masterLog.text.components(separatedBy: "crossed ").count - 1 >= ports }
    }

    func setLink(slave: Int, up: Bool) {
        _ = script(["link", prefix, String(slave), up ? "up" : "down"])
    }

    /// Bounded: a master that does not leave on SIGTERM within 5 s (a wedged jackd keeps its
    /// script waiting) is killed with everything else in the namespaces by `down`.
    func tearDown() {
        if let master, master.isRunning {
            master.terminate()
            if !master.waitForExit(seconds: 5) { print("NetJackRig: the master did not stop on SIGTERM within 5 s; killing it: \(masterLog.text.suffix(2000))") }
        }
        _ = script(["down", prefix])
        master?.stop(signal: SIGKILL, grace: 5)
    }

    /// Runs `body` on a new thread inside namespace `name` (e.g. "\(prefix)-s1") and waits for it.
    func inNamespace<T>(_ name: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            defer { done.signal() }
            do {
                try self.enter(name)
                result.value = .success(try body())
            } catch {
                result.value = .failure(error)
            }
        }
        thread.start()
        done.wait()
        return try result.value.get()
    }

    private func enter(_ name: String) throws {
        typealias SetNS = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else { throw RigError("no setns in libc") }
        let setns = unsafeBitCast(symbol, to: SetNS.self)
        let descriptor = open("/var/run/netns/\(name)", O_RDONLY)
        guard descriptor >= 0 else { throw RigError("cannot open namespace \(name)") }
        defer { close(descriptor) }
        let cloneNewNet: Int32 = 0x4000_0000
        guard setns(descriptor, cloneNewNet) == 0 else { throw RigError("setns into \(name) failed: errno \(errno)") }
    }

    @discardableResult
    private func script(_ arguments: [String]) -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PackageRoot.path("scripts/netjack-netns.sh"))
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (127, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// A file that collects a child's output, readable while it runs.
final class TemporaryLog: @unchecked Sendable {
    let path: String
    let handle: FileHandle

    /// Why the log file could not be made (a full or read-only temporary folder), if so: the
    /// child's output then goes nowhere and `text` says why, so a test waiting on it fails
    /// naming the cause instead of crashing.
    private let creationFailure: String?

    init() {
        path = NSTemporaryDirectory() + "sonora-netjack-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).log"
        let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
            creationFailure = nil
        } else {
            handle = FileHandle.nullDevice
            creationFailure = "cannot create the log \(path): \(String(cString: strerror(errno)))"
        }
    }

    deinit {
        guard creationFailure == nil else { return }
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    var text: String { creationFailure ?? (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
}

struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = HostTime.now.seconds + seconds
    while !condition() {
        if HostTime.now.seconds > deadline { return false }
        usleep(20_000)
    }
    return true
}

/// An I/O procedure that sends its input straight back (a slave turning the master's signal round).
final class LoopBack: IOCycleTarget, @unchecked Sendable {
    let cycles = Atomic<Int>(0)
    /// Input sample time of each cycle (first 65536 cycles).
    let sampleTimes: UnsafeMutableBufferPointer<Double>

    override init() {
        sampleTimes = .allocate(capacity: 1 << 16)
        sampleTimes.initialize(repeating: -1)
    }

    deinit { sampleTimes.deallocate() }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let index = cycles.load(ordering: .relaxed)
        if index < sampleTimes.count { sampleTimes[index] = cycle.pointee.inputTime.sampleTime }
        let channels = min(cycle.pointee.input.channelCount, cycle.pointee.output.channelCount)
        for channel in 0..<channels {
            cycle.pointee.output.samples(channel).update(from: cycle.pointee.input.samples(channel), count: cycle.pointee.frameCount)
        }
        cycles.store(index + 1, ordering: .releasing)
        return 0
    }
}

/// A result handed from one thread to another (the handing over is ordered by a semaphore).
final class ResultBox<T>: @unchecked Sendable {
    var value: Result<T, Error> = .failure(RigError("thread did not run"))
}
