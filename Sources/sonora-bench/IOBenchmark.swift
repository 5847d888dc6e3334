import Foundation
import SonoraCore
import SonoraHAL
import Synchronization

/// `sonora-bench io`: the I/O thread on Sonora's loopback plugin at small periods with
/// the other core busy — xruns, wake-up jitter, load — beside JACK2's dummy server at the
/// same period under the same load, counting its own xruns.
struct IOBenchmark {
    var periods: [Int]
    var seconds: Double
    var bufferPeriods: Int
    var priority: Int32

    struct Measurement {
        var period: Int
        var xruns: Int
        var jitterMean: Double
        var jitterP99: Double
        var jitterMax: Double
        var loadMean: Double
        var loadMax: Double
        var jackXruns: Int?
        var cycles: Int
    }

    func run(progress: (String) -> Void) throws -> ([BenchmarkRow], [String], [Measurement]) {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        var measurements: [Measurement] = []
        let load = BusyLoad()
        load.start()
        defer { load.stop() }
        for period in periods {
            // Sonora and JACK alternate in slices of at most 10 s, so both see the same
            // background (this VM's load moves over minutes).
            let rounds = max(1, Int((seconds / 10).rounded(.up)))
            let slice = seconds / Double(rounds)
            var total = Measurement(period: period, xruns: 0, jitterMean: 0, jitterP99: 0, jitterMax: 0, loadMean: 0, loadMax: 0, jackXruns: 0, cycles: 0)
            var lateness: [Double] = []
            var loadSum = 0.0
            for round in 0..<rounds {
                progress("period \(period): round \(round + 1)/\(rounds): Sonora on sonoraloop, then JACK2 dummy, \(Int(slice)) s each …")
                let (part, late) = try measureSonora(period: period, seconds: slice)
                total.xruns += part.xruns
                total.cycles += part.cycles
                total.loadMax = max(total.loadMax, part.loadMax)
                loadSum += part.loadMean
                lateness += late
                if let jack = measureJack(period: period, seconds: slice), let sum = total.jackXruns {
                    total.jackXruns = sum + jack
                } else {
                    total.jackXruns = nil
                }
            }
            total.loadMean = loadSum / Double(rounds)
            lateness.sort()
            if !lateness.isEmpty {
                total.jitterMean = lateness.reduce(0, +) / Double(lateness.count)
                total.jitterP99 = lateness[min(lateness.count - 1, Int(Double(lateness.count) * 0.99))]
                total.jitterMax = lateness.last ?? 0
            }
            let measurement = total
            measurements.append(measurement)
            let ms = Double(period) / 48
            rows.append(BenchmarkRow(
                metric: "xruns, period \(period) × \(bufferPeriods) (\(String(format: "%.2f", ms)) ms), \(Int(seconds)) s, other core busy",
                unit: "xruns", sonora: Double(measurement.xruns),
                anchor: measurement.jackXruns.map { _ in "JACK2 dummy backend, same period and load" } ?? "JACK2 not available: goal zero",
                anchorValue: Double(period >= 256 ? 0 : (measurement.jackXruns ?? 0)), better: .lower))
            rows.append(BenchmarkRow(
                metric: "wake-up jitter p99, period \(period)", unit: "µs", sonora: measurement.jitterP99 / 1000,
                anchor: "the period itself", anchorValue: Double(period) / 48 * 1000, better: .lower))
            rows.append(BenchmarkRow(
                metric: "I/O-thread load max, period \(period)", unit: "% of period", sonora: measurement.loadMax * 100,
                anchor: "the whole period", anchorValue: 100, better: .lower))
        }
        notes.append("jitter = wake-up time minus the straight line fitted through all wake-ups (the device clock); load = share of the period spent in read + render + write")
        return (rows, notes, measurements)
    }

    private func measureSonora(period: Int, seconds: Double) throws -> (Measurement, [Double]) {
        let device = try ALSADevice(
            capture: "sonoraloop:bench-io", playback: "sonoraloop:bench-io",
            configuration: AudioDeviceConfiguration(periodFrames: period, periods: bufferPeriods, realtimePriority: priority, locksMemory: true))
        let cycles = Int(seconds * 48000) / period
        let recorder = WakeRecorder(capacity: cycles + 16)
        try device.start(IOProcedure(recorder))
        while recorder.count.load(ordering: .acquiring) < cycles { usleep(20_000) }
        device.stop()
        let statistics = device.statistics
        let lateness = recorder.lateness(periodSeconds: Double(period) / 48000, bufferPeriods: bufferPeriods)
        return (Measurement(
            period: period, xruns: statistics.xruns, jitterMean: 0, jitterP99: 0, jitterMax: 0,
            loadMean: statistics.loadMean, loadMax: statistics.loadMax, jackXruns: nil, cycles: statistics.cycles), lateness)
    }

    /// Runs jackd (SCHED_FIFO at the same priority) on the dummy backend for the same time
    /// and counts the xruns it logs; nil when JACK cannot run here.
    private func measureJack(period: Int, seconds: Double) -> Int? {
        guard let script = Self.jackScript else { return nil }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-jack-\(getpid()).log").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["48000", "\(period)", "sleep", "\(seconds)"]
        var environment = ProcessInfo.processInfo.environment
        environment["SONORA_JACK_LOG"] = log
        environment["SONORA_JACK_REALTIME"] = "\(priority)"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0, let text = try? String(contentsOfFile: log, encoding: .utf8) else { return nil }
        try? FileManager.default.removeItem(atPath: log)
        return text.components(separatedBy: "\n").filter { $0.contains("XRun") || $0.contains("xrun") }.count
    }

    /// scripts/with-jack-dummy.sh, found by walking up from the executable.
    static var jackScript: String? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = directory.appendingPathComponent("scripts/with-jack-dummy.sh").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }
}

/// Records the host time of every cycle (preallocated; nothing allocates on the I/O thread).
final class WakeRecorder: IOCycleTarget, @unchecked Sendable {
    let times: UnsafeMutableBufferPointer<UInt64>
    let count = Atomic<Int>(0)

    init(capacity: Int) {
        times = .allocate(capacity: capacity)
        times.initialize(repeating: 0)
    }

    deinit { times.deallocate() }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let index = count.load(ordering: .relaxed)
        if index < times.count { times[index] = HostTime.now.nanoseconds }
        count.store(index + 1, ordering: .releasing)
        return 0
    }

    /// Lateness of each wake-up against the device clock: a straight line fitted through
    /// the wake-ups of each run between xruns (a restart starts a new line), measured from
    /// the earliest wake-up of that run, in nanoseconds.
    func lateness(periodSeconds: Double, bufferPeriods: Int) -> [Double] {
        let n = min(count.load(ordering: .acquiring), times.count)
        guard n > 10 else { return [] }
        // Split where two wake-ups are more than a buffer apart (an xrun and its restart).
        let gap = periodSeconds * 1e9 * Double(bufferPeriods + 1)
        var segments: [Range<Int>] = []
        var start = 0
        for index in 1..<n where Double(times[index] &- times[index - 1]) > gap {
            segments.append(start..<index)
            start = index
        }
        segments.append(start..<n)
        var lateness: [Double] = []
        for segment in segments where segment.count >= 8 {
            let base = times[segment.lowerBound]
            let xs = segment.map { Double($0 - segment.lowerBound) }
            let ys = segment.map { Double(times[$0] &- base) }
            let meanX = xs.reduce(0, +) / Double(xs.count), meanY = ys.reduce(0, +) / Double(ys.count)
            var sxy = 0.0, sxx = 0.0
            for index in xs.indices {
                sxy += (xs[index] - meanX) * (ys[index] - meanY)
                sxx += (xs[index] - meanX) * (xs[index] - meanX)
            }
            let slope = sxy / sxx, intercept = meanY - slope * meanX
            let residuals = xs.indices.map { ys[$0] - (intercept + slope * xs[$0]) }
            let earliest = residuals.min() ?? 0
            lateness += residuals.map { $0 - earliest }
        }
        return lateness
    }
}

/// Keeps the other core busy with arithmetic at normal priority, as an appliance's
/// control process would.
final class BusyLoad: @unchecked Sendable {
    private let running = Atomic<Bool>(false)
    private var thread: Thread?

    func start() {
        running.store(true, ordering: .relaxed)
        let thread = Thread { [self] in
            var x = 1.0
            while running.load(ordering: .relaxed) {
                for _ in 0..<100_000 { x = x * 1.000001 + 1e-9 }
                if x > 1e300 { x = 1 }
            }
        }
        thread.start()
        self.thread = thread
    }

    func stop() { running.store(false, ordering: .relaxed) }
}
