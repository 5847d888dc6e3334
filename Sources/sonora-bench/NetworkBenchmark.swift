import CSonoraSystem
import Foundation
import SonoraCore
import SonoraHAL
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `sonora-bench network`: Sonora as a netjack2 slave of jackd's netmanager across two
/// network namespaces (scripts/netjack-netns.sh; root). Round trip per period size
/// against the configured latency + 1 cycles (the master loops the slave's channels
/// back in its next cycle), and the slave's CPU per second of audio against JACK's own
/// `jack_net_slave` doing the same loop in the same run.
struct NetworkBenchmark {
    var seconds: Double
    var periods: [Int]
    var trials = 3
    var latency = 2
    let rate = 48000

    func run(log: (String) -> Void) throws -> (rows: [BenchmarkRow], notes: [String]) {
        let script = FileManager.default.currentDirectoryPath + "/scripts/netjack-netns.sh"
        guard FileManager.default.isExecutableFile(atPath: script) else {
            throw BenchError("run from the repository root: \(script) is missing")
        }
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        var retries = 0
        var slaveRetries = 0
        for period in periods {
            let network = BenchNetwork(script: script, tag: period)
            defer {
                retries += network.anchorRetries
                slaveRetries += network.slaveRetries
                network.tearDown()
            }
            try network.up(rate: rate, period: period)
            let first = try slaveRun(on: network, period: period, measuringImpulse: true)
            log("\(period) frames: impulse back after \(first.roundTrip) cycles; slave CPU \(first.cpuPerSecond) ms per s; \(first.note)")
            rows.append(BenchmarkRow(metric: "round trip through netjack2 @\(period) frames (latency=\(latency))", unit: "cycles", sonora: first.roundTrip, anchor: "configured latency + 1", anchorValue: Double(latency + 1), better: .lower))
            guard period == 256 else { continue }
            // The contenders alternate, each on a master of its own: a netjack2 slave leaves
            // without telling the master, which keeps cycling the closed slave until its
            // timeout and stalls meanwhile, so whoever came second would run on a disturbed master.
            var sonora: [Double] = [first.cpuPerSecond]
            var jack: [Double] = []
            for trial in 0..<trials {
                if trial > 0 {
                    try network.restartMaster(rate: rate, period: period)
                    let next = try slaveRun(on: network, period: period, measuringImpulse: false)
                    log("trial \(trial + 1): Sonora's slave \(next.cpuPerSecond) ms per s; \(next.note)")
                    sonora.append(next.cpuPerSecond)
                }
                try network.restartMaster(rate: rate, period: period)
                let anchor = try network.anchorCPU(seconds: seconds, rate: rate, period: period)
                log("trial \(trial + 1): jack_net_slave \(anchor) ms per s")
                jack.append(anchor)
            }
            // Best of the trials for each (the least disturbed run), as the other benchmarks do.
            rows.append(BenchmarkRow(
                metric: "slave CPU per second of audio @256 (2+2 ch loop)", unit: "ms/s", sonora: sonora.min()!, anchor: "jack_net_slave",
                anchorValue: jack.min()!, better: .lower))
            notes.append("slave CPU trials (ms/s): Sonora \(sonora.map { String(format: "%.2f", $0) }.joined(separator: ", ")); jack_net_slave \(jack.map { String(format: "%.2f", $0) }.joined(separator: ", "))")
            // Each trial's two measurements are seconds apart, so their ratio cancels the
            // machine's slow load changes that best ÷ best (one lucky trial each) does not.
            let pairs = zip(sonora, jack).map { $0 / $1 }.sorted()
            let median = pairs.count % 2 == 1 ? pairs[pairs.count / 2] : (pairs[pairs.count / 2 - 1] + pairs[pairs.count / 2]) / 2
            notes.append("slave CPU per trial, Sonora ÷ jack_net_slave: \(zip(sonora, jack).map { String(format: "%.2f", $0 / $1) }.joined(separator: ", ")) (median \(String(format: "%.3f", median)))")
        }
        if retries > 0 { notes.append("jack_net_slave did not connect \(retries) time(s) and was tried again on a master started afresh") }
        if slaveRetries > 0 { notes.append("Sonora's slave was not looped back \(slaveRetries) time(s) and was tried again on a master started afresh") }
        notes.append("master: jackd (dummy backend) + netmanager in its own namespace, started afresh for each slave\(BenchNetwork.pinned ? ", on CPU 0, each slave on CPU 1, as on two machines" : ""); CPU is the slave process's threads' run time (schedstat, ns) over the same wall-clock window, per second")
        return (rows, notes)
    }

    /// One Sonora slave on `network`'s master: connected, looped, measured, stopped.
    private func slaveRun(on network: BenchNetwork, period: Int, measuringImpulse: Bool) throws -> (roundTrip: Double, cpuPerSecond: Double, note: String) {
        let name = try NetJackDeviceName.parse("slave@\(network.masterAddress),latency=\(latency),name=bench")
        var connected: (device: NetJackSlaveDevice, loop: BenchLoop)?
        // As jack_net_slave (`anchorCPU`), Sonora's slave now and then is never looped back by
        // a fresh master (once in `make test`): it is stopped and tried once more on a master
        // started afresh, counted in `slaveRetries`.
        for attempt in 1...2 where connected == nil {
            if attempt > 1 {
                network.slaveRetries += 1
                try network.restartMaster(rate: rate, period: period)
            }
            let loop = BenchLoop()
            let device = try network.inSlaveNamespace { () throws -> NetJackSlaveDevice in
                // libjacknet's process thread and the watcher inherit this thread's CPU.
                if let cpu = BenchNetwork.slaveCPU { _ = sonora_thread_set_affinity(pthread_self(), Int32(cpu)) }
                let device = try NetJackSlaveDevice(name: name, configuration: AudioDeviceConfiguration(sampleRate: rate, periodFrames: period, inputChannels: 2, outputChannels: 2))
                try device.start(loop.procedure)
                return device
            }
            if network.waitForLoops(2) { connected = (device, loop) } else { device.stop() }
        }
        guard let (device, loop) = connected else {
            throw BenchError("jackd's netmanager did not loop the slave back (twice, each time on a master started afresh)")
        }
        if measuringImpulse {
            // The impulse goes out once the loop is connected; it is back long before the CPU window ends.
            loop.impulseAt.store(loop.framesPlayed.load(ordering: .relaxed) + rate / 10, ordering: .relaxed)
        }
        let framesStart = loop.framesPlayed.load(ordering: .relaxed)
        // This thread (the process's main one) only measures: jack_net_slave is measured from
        // outside its process, so this one's reading of /proc is not the slave's either.
        let cpu = ProcessCPU.measure(pid: getpid(), seconds: seconds, excludingThread: Int(getpid()))
        let audio = Double(loop.framesPlayed.load(ordering: .relaxed) - framesStart) / Double(rate)
        device.stop()
        let heard = loop.heardAt.load(ordering: .relaxed)
        let roundTrip = heard >= 0 ? Double(heard - loop.impulseAt.load(ordering: .relaxed)) / Double(period) : .nan
        let note = String(
            format: "%.2f s of audio in %.2f s; %d interruptions, %d damaged packets; the measuring thread's %.3f ms/s not counted",
            audio, cpu.wallSeconds, device.statistics.interruptions, device.packetErrors, cpu.excludedSeconds / cpu.wallSeconds * 1000)
        return (roundTrip, cpu.seconds / cpu.wallSeconds * 1000, note)
    }
}

/// A process's CPU time, measured the same way for Sonora's slave (this process) and for
/// jack_net_slave: the sum of its threads' run time from /proc/PID/task/*/schedstat
/// (nanoseconds, as the scheduler accounts it), over a wall-clock window. (/proc/PID/stat's
/// utime + stime come in clock ticks: at ~20 ms/s over a few seconds, ±1 tick is several %.)
/// `excludingThread` leaves out one thread (the measuring one, when it is in `pid`), whose
/// run time comes back as `excludedSeconds`.
enum ProcessCPU {
    static func measure(pid: Int32, seconds: Double, excludingThread excluded: Int? = nil) -> (seconds: Double, wallSeconds: Double, excludedSeconds: Double) {
        let cpuStart = runTime(of: pid)
        let wallStart = HostTime.now.nanoseconds
        usleep(UInt32(seconds * 1e6))
        let cpuEnd = runTime(of: pid)
        let wall = Double(HostTime.now.nanoseconds - wallStart) / 1e9
        // A thread alive at both ends counts its difference; one born in the window all of it.
        var total: UInt64 = 0
        var left: UInt64 = 0
        for (thread, end) in cpuEnd {
            let used = end - min(cpuStart[thread] ?? 0, end)
            if thread == excluded { left += used } else { total += used }
        }
        return (Double(total) / 1e9, wall, Double(left) / 1e9)
    }

    /// Run time (ns) of each thread of `pid`.
    static func runTime(of pid: Int32) -> [Int: UInt64] {
        var times: [Int: UInt64] = [:]
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return times }
        for thread in threads {
            guard let id = Int(thread), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let nanoseconds = UInt64(first) else { continue }
            times[id] = nanoseconds
        }
        return times
    }
}

/// Loops input to output and finds one impulse: plays 1.0 at output frame `impulseAt`,
/// records the first input frame that is not zero.
///
/// The bench's stand-in for jack_net_slave's process callback (a plain C function that
/// copies its inputs to its outputs), so it is called as one: a C function pointer and a
/// context (`procedure`), not an `IOCycleTarget` subclass reached through its class's
/// vtable (a load from the class metadata, one more cold page each cycle, that the driver
/// under test does not need and jack_net_slave's callback does not pay).
final class BenchLoop: @unchecked Sendable {
    let impulseAt = Atomic<Int>(Int.max)
    let heardAt = Atomic<Int>(-1)
    let framesPlayed = Atomic<Int>(0)

    /// Calls `process(_:)`; the caller keeps the loop alive while the device runs.
    var procedure: IOProcedure {
        IOProcedure(
            function: { context, cycle in
                Unmanaged<BenchLoop>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.process(cycle.assumingMemoryBound(to: IOCycle.self)) }
            }, context: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Inlined into `procedure`'s function: one function, as jack_net_slave's callback is.
    @inline(__always)
    func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let frames = cycle.pointee.frameCount
        let start = framesPlayed.load(ordering: .relaxed)
        let impulse = impulseAt.load(ordering: .relaxed)
        let input = cycle.pointee.input
        let output = cycle.pointee.output
        if heardAt.load(ordering: .relaxed) < 0 && impulse != Int.max && input.channelCount > 0 {
            let samples = input.samples(0)
            for frame in 0..<frames where samples[frame] != 0 {
                heardAt.store(start + frame, ordering: .relaxed)
                break
            }
        }
        // Channel 1 carries the loop's work (input straight back); channel 0 the impulse.
        if output.channelCount > 1 && input.channelCount > 1 {
            output.samples(1).update(from: input.samples(1), count: frames)
        }
        if output.channelCount > 0 && impulse >= start && impulse < start + frames {
            output.samples(0)[impulse - start] = 1
        }
        framesPlayed.store(start + frames, ordering: .relaxed)
        return 0
    }
}

/// The bench's private network: a master and one slave namespace, jackd in the master's.
final class BenchNetwork: @unchecked Sendable {
    let script: String
    let prefix: String
    let subnet: Int
    private var master: Process?
    /// Times jack_net_slave was started again after it did not connect (`anchorCPU`).
    var anchorRetries = 0
    /// Times Sonora's slave was not looped back and was tried again on a fresh master.
    var slaveRetries = 0
    private let logPath: String

    init(script: String, tag: Int) {
        self.script = script
        prefix = "snb\(getpid() % 100_000)p\(tag)"
        subnet = 20 + Int(getpid() % 100) + tag % 97
        logPath = NSTemporaryDirectory() + "\(prefix).log"
    }

    var masterAddress: String { "10.77.\(subnet).1" }

    /// The master (jackd and its netmanager) on one CPU, the slave under test on another,
    /// as on two machines: sharing a CPU, a slave at a higher realtime priority than the
    /// master's sending thread preempts it between the sync packet and the data, and
    /// blocks twice a cycle; whether it did depended on where the scheduler put it, run
    /// by run, for either contender. Nil (no pinning) on a one-CPU machine or without taskset.
    static let pinned = sysconf(Int32(_SC_NPROCESSORS_ONLN)) >= 2 && FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset")
    static var masterCPU: Int? { pinned ? 0 : nil }
    static var slaveCPU: Int? { pinned ? 1 : nil }

    func up(rate: Int, period: Int) throws {
        try upNamespaces()
        try startMaster(rate: rate, period: period)
    }

    /// The namespaces and their link only, no jackd (for a master of Sonora's own).
    func upNamespaces() throws {
        guard shell([script, "up", prefix, "1", String(subnet)]) == 0 else { throw BenchError("cannot make network namespaces (root and iproute2 needed)") }
    }

    private func startMaster(rate: Int, period: Int) throws {
        guard FileManager.default.createFile(atPath: logPath, contents: nil), let handle = FileHandle(forWritingAtPath: logPath) else {
            throw BenchError("cannot create jackd's log \(logPath)")
        }
        let process = Process()
        if let cpu = Self.masterCPU {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            process.arguments = ["-c", String(cpu), script, "master", prefix, String(rate), String(period)]
        } else {
            process.executableURL = URL(fileURLWithPath: script)
            process.arguments = ["master", prefix, String(rate), String(period)]
        }
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        master = process
        guard wait(seconds: 15, { self.log.contains("ready") }) else { throw BenchError("jackd master did not start: \(log)") }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// A fresh jackd + netmanager in the master's namespace (the namespaces stay).
    func restartMaster(rate: Int, period: Int) throws {
        if let master { Self.end(master) }
        master = nil
        // Whatever a killed master left in its namespace (jackd) would answer the next slave too.
        for pid in namespacePIDs("\(prefix)-m") { kill(pid, SIGKILL) }
        try startMaster(rate: rate, period: period)
    }

    func waitForLoops(_ count: Int) -> Bool {
        wait(seconds: 15) { self.log.components(separatedBy: "looped ").count - 1 >= count }
    }

    /// jack_net_slave (JACK's own, looping its inputs to its outputs) in the slave namespace:
    /// its CPU per second over `seconds` (`ip netns exec` execs the program: same pid). The
    /// anchor sometimes never connects to a fresh master (2 of 20 bench runs, and once in
    /// `make test`): it is then ended and tried once more on a master started afresh
    /// (`rate`, `period`), counted in `anchorRetries`.
    func anchorCPU(seconds: Double, rate: Int, period: Int) throws -> Double {
        for attempt in 1...2 {
            if attempt > 1 {
                anchorRetries += 1
                try restartMaster(rate: rate, period: period)
            }
            let loopsBefore = log.components(separatedBy: "looped ").count - 1
            let process = try launchAnchorSlave()
            // jack_net_slave closes its connection from its signal handler, which can hang: SIGKILL after a grace period.
            defer { Self.end(process) }
            guard wait(seconds: 15, { self.log.components(separatedBy: "looped ").count - 1 >= loopsBefore + 2 }) else { continue }
            let cpu = ProcessCPU.measure(pid: process.processIdentifier, seconds: seconds)
            return cpu.seconds / cpu.wallSeconds * 1000
        }
        throw BenchError("jack_net_slave did not connect (twice, each time to a master started afresh)")
    }

    /// jack_net_slave in the slave namespace, on the slave's CPU, 2 inputs looped to 2
    /// outputs, announcing itself to `masterAddress`; running until `end`ed.
    func launchAnchorSlave() throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        let pin = Self.slaveCPU.map { ["taskset", "-c", String($0)] } ?? []
        process.arguments = ["netns", "exec", "\(prefix)-s1"] + pin + ["jack_net_slave", "-a", masterAddress, "-C", "2", "-P", "2"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `body` on a thread inside the slave namespace (setns is per thread).
    func inSlaveNamespace<T>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let box = BenchResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let name = "\(prefix)-s1"
        Thread {
            defer { done.signal() }
            box.value = Result {
                typealias SetNS = @convention(c) (Int32, Int32) -> Int32
                guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else { throw BenchError("no setns in libc") }
                let descriptor = open("/var/run/netns/\(name)", O_RDONLY)
                guard descriptor >= 0 else { throw BenchError("cannot open namespace \(name)") }
                defer { Glibc.close(descriptor) }
                guard unsafeBitCast(symbol, to: SetNS.self)(descriptor, 0x4000_0000) == 0 else { throw BenchError("setns into \(name) failed") }
                return try body()
            }
        }.start()
        done.wait()
        return try box.value.get()
    }

    /// SIGTERM, then SIGKILL if the process is still there after 3 s; waits for it at most
    /// 10 s more. Foundation's `Process` learns of an exit from its SIGCHLD handler on a
    /// dispatch queue: on a starved machine that took minutes, and an unbounded
    /// `waitUntilExit()` held the whole bench on a killed child. A child still not seen to
    /// exit is named on stderr and left; the run goes on.
    static func end(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<150 where process.isRunning { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<500 where process.isRunning { usleep(20_000) }
        if process.isRunning {
            let name = process.executableURL?.lastPathComponent ?? "child"
            FileHandle.standardError.write(Data("sonora-bench network: \(name) (pid \(process.processIdentifier)) not seen to exit 10 s after SIGKILL; not waiting for it\n".utf8))
        }
    }

    func tearDown() {
        if let master { Self.end(master) }
        _ = shell([script, "down", prefix])
        try? FileManager.default.removeItem(atPath: logPath)
    }

    private func namespacePIDs(_ namespace: String) -> [Int32] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "pids", namespace]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [] }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
    }

    private func shell(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return 127 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    private func wait(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }
}

final class BenchResultBox<T>: @unchecked Sendable {
    var value: Result<T, Error> = .failure(BenchError("thread did not run"))
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
