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
    var latency = 2
    let rate = 48000

    func run(log: (String) -> Void) throws -> (rows: [BenchmarkRow], notes: [String]) {
        let script = FileManager.default.currentDirectoryPath + "/scripts/netjack-netns.sh"
        guard FileManager.default.isExecutableFile(atPath: script) else {
            throw BenchError("run from the repository root: \(script) is missing")
        }
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        for period in periods {
            let network = BenchNetwork(script: script, tag: period)
            defer { network.tearDown() }
            try network.up(rate: rate, period: period)
            let name = try NetJackDeviceName.parse("slave@\(network.masterAddress),latency=\(latency),name=bench")
            let loop = BenchLoop()
            let device = try network.inSlaveNamespace { () throws -> NetJackSlaveDevice in
                let device = try NetJackSlaveDevice(name: name, configuration: AudioDeviceConfiguration(sampleRate: rate, periodFrames: period, inputChannels: 2, outputChannels: 2))
                try device.start(IOProcedure(loop))
                return device
            }
            guard network.waitForLoops(2) else { device.stop(); throw BenchError("jackd's netmanager did not loop the slave back") }
            // The impulse goes out once the loop is connected; then CPU over `seconds` of audio.
            loop.impulseAt.store(loop.framesPlayed.load(ordering: .relaxed) + rate / 10, ordering: .relaxed)
            let cpuStart = Self.processCPU()
            let framesStart = loop.framesPlayed.load(ordering: .relaxed)
            usleep(UInt32(seconds * 1e6))
            let cpu = Self.processCPU() - cpuStart
            let audio = Double(loop.framesPlayed.load(ordering: .relaxed) - framesStart) / Double(rate)
            device.stop()
            let heard = loop.heardAt.load(ordering: .relaxed)
            let roundTrip = heard >= 0 ? Double(heard - loop.impulseAt.load(ordering: .relaxed)) / Double(period) : .nan
            log("\(period) frames: impulse back after \(roundTrip) cycles; slave CPU \(cpu / audio * 1000) ms per s of audio; \(device.statistics.interruptions) interruptions, \(device.packetErrors) damaged packets")
            rows.append(BenchmarkRow(metric: "round trip through netjack2 @\(period) frames (latency=\(latency))", unit: "cycles", sonora: roundTrip, anchor: "configured latency + 1", anchorValue: Double(latency + 1), better: .lower))
            if period == 256 {
                let sonoraCPU = cpu / audio * 1000
                let jack = try network.anchorCPU(seconds: seconds, latency: latency)
                log("jack_net_slave: \(jack) ms per s of audio")
                rows.append(BenchmarkRow(metric: "slave CPU per second of audio @256 (2+2 ch loop)", unit: "ms/s", sonora: sonoraCPU, anchor: "jack_net_slave", anchorValue: jack, better: .lower))
            }
        }
        notes.append("master: jackd (dummy backend, no realtime) + netmanager in its own namespace; CPU is each slave process's user+system time")
        return (rows, notes)
    }

    static func processCPU() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// Loops input to output and finds one impulse: plays 1.0 at output frame `impulseAt`,
/// records the first input frame that is not zero.
final class BenchLoop: IOCycleTarget, @unchecked Sendable {
    let impulseAt = Atomic<Int>(Int.max)
    let heardAt = Atomic<Int>(-1)
    let framesPlayed = Atomic<Int>(0)

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
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
    private let logPath: String

    init(script: String, tag: Int) {
        self.script = script
        prefix = "snb\(getpid() % 100_000)p\(tag)"
        subnet = 20 + Int(getpid() % 100) + tag % 97
        logPath = NSTemporaryDirectory() + "\(prefix).log"
    }

    var masterAddress: String { "10.77.\(subnet).1" }

    func up(rate: Int, period: Int) throws {
        guard shell([script, "up", prefix, "1", String(subnet)]) == 0 else { throw BenchError("cannot make network namespaces (root and iproute2 needed)") }
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["master", prefix, String(rate), String(period)]
        let handle = FileHandle(forWritingAtPath: logPath)!
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        master = process
        guard wait(seconds: 15, { self.log.contains("ready") }) else { throw BenchError("jackd master did not start: \(log)") }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func waitForLoops(_ count: Int) -> Bool {
        wait(seconds: 15) { self.log.components(separatedBy: "looped ").count - 1 >= count }
    }

    /// jack_net_slave (JACK's own, looping its inputs to its outputs) in the slave namespace:
    /// its CPU per second of audio over `seconds`.
    func anchorCPU(seconds: Double, latency: Int) throws -> Double {
        let loopsBefore = log.components(separatedBy: "looped ").count - 1
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", "\(prefix)-s1", "jack_net_slave", "-a", masterAddress, "-C", "2", "-P", "2"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        guard wait(seconds: 15, { self.log.components(separatedBy: "looped ").count - 1 >= loopsBefore + 2 }) else { throw BenchError("jack_net_slave did not connect") }
        let start = Self.cpu(of: process.processIdentifier)
        usleep(UInt32(seconds * 1e6))
        return (Self.cpu(of: process.processIdentifier) - start) / seconds * 1000
    }

    /// user + system seconds of a process (`ip netns exec` execs the program: same pid).
    static func cpu(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
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

    func tearDown() {
        if let master, master.isRunning { master.terminate(); master.waitUntilExit() }
        _ = shell([script, "down", prefix])
        try? FileManager.default.removeItem(atPath: logPath)
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
