import Foundation
import SonoraCore
import SonoraHAL
import Synchronization

/// `sonora-bench io`: the I/O thread on Sonora's loopback plugin at small periods with
/// the other core busy — xruns, wake-up lateness, load — in each wake-up mode, beside
/// JACK2's dummy server at the same period under the same load, counting its own xruns.
/// `soak`: one long run per mode at 256 frames with no load and no JACK.
struct IOBenchmark {
    var periods: [Int]
    var seconds: Double
    var bufferPeriods: Int
    var priority: Int32
    var modes: [Mode] = [.poll]
    /// The loopback plugin's pointer step (frames).
    var granularity = 32
    var soak = false

    enum Mode: Hashable {
        case poll
        case timer(headroomMicroseconds: Int)

        var wakeUp: AudioDeviceConfiguration.WakeUp {
            switch self {
            case .poll: .poll
            case .timer(let headroom): .timer(headroomMicroseconds: headroom)
            }
        }

        var label: String {
            switch self {
            case .poll: "poll"
            case .timer(let headroom): "timer, \(headroom) µs headroom"
            }
        }
    }

    struct Measurement {
        var period: Int
        var mode: Mode
        var xruns = 0
        var latenessP50 = 0.0
        var latenessP99 = 0.0
        var latenessP999 = 0.0
        var latenessMax = 0.0
        var loadMean = 0.0
        var loadMax = 0.0
        var jackXruns: Int?
        /// JACK2's client wake-up lateness in the same slices (ns), when JACK ran.
        var jackLatenessP50: Double?
        var jackLatenessP99: Double?
        var jackLatenessMax: Double?
        var cycles = 0
        var timerFallbacks = 0
        /// Where in its slice each slice's worst wake-up fell (cycle index, of the slice's cycles): a
        /// start-up transient shows as index 0–10, a stall anywhere.
        var worstWakeUps: [(cycle: Int, of: Int, microseconds: Double)] = []
    }

    func run(progress: (String) -> Void) throws -> ([BenchmarkRow], [String], [Measurement]) {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        var measurements: [Measurement] = []
        let load = BusyLoad()
        if !soak { load.start() }
        defer { load.stop() }
        for period in periods {
            // The modes and JACK alternate in slices of at most 10 s, so all see the same
            // background (this VM's load moves over minutes). A soak is one piece.
            let rounds = soak ? 1 : max(1, Int((seconds / 10).rounded(.up)))
            let slice = seconds / Double(rounds)
            var totals = modes.map { Measurement(period: period, mode: $0) }
            var lateness = modes.map { _ in [Double]() }
            var loadSums = modes.map { _ in 0.0 }
            var jackXruns: Int? = soak ? nil : 0
            var jackLateness: [Double] = []
            for round in 0..<rounds {
                for (index, mode) in modes.enumerated() {
                    progress("period \(period): round \(round + 1)/\(rounds): Sonora on sonoraloop (\(mode.label)), \(Int(slice)) s …")
                    let (part, late) = try measureSonora(period: period, mode: mode, seconds: slice)
                    totals[index].xruns += part.xruns
                    totals[index].cycles += part.cycles
                    totals[index].timerFallbacks += part.timerFallbacks
                    if let worst = late.indices.max(by: { late[$0] < late[$1] }) {
                        totals[index].worstWakeUps.append((worst, late.count, late[worst] / 1000))
                    }
                    totals[index].loadMax = max(totals[index].loadMax, part.loadMax)
                    loadSums[index] += part.loadMean
                    lateness[index] += late
                }
                guard !soak else { continue }
                progress("period \(period): round \(round + 1)/\(rounds): JACK2 dummy, \(Int(slice)) s …")
                if let jack = measureJack(period: period, seconds: slice), let sum = jackXruns {
                    jackXruns = sum + jack.xruns
                    jackLateness += jack.lateness
                } else {
                    jackXruns = nil
                }
            }
            let jackSorted = jackLateness.sorted()
            for index in modes.indices {
                var total = totals[index]
                total.jackXruns = jackXruns
                total.loadMean = loadSums[index] / Double(rounds)
                let sorted = lateness[index].sorted()
                total.latenessP50 = Self.percentile(sorted, 0.5)
                total.latenessP99 = Self.percentile(sorted, 0.99)
                total.latenessP999 = Self.percentile(sorted, 0.999)
                total.latenessMax = sorted.last ?? 0
                if jackXruns != nil && !jackSorted.isEmpty {
                    total.jackLatenessP50 = Self.percentile(jackSorted, 0.5)
                    total.jackLatenessP99 = Self.percentile(jackSorted, 0.99)
                    total.jackLatenessMax = jackSorted.last
                }
                measurements.append(total)
                rows += self.rows(for: total)
            }
        }
        notes.append("lateness = wake-up time minus the straight line fitted through all wake-ups of a run between xruns (the device clock), from the earliest; load = share of the period spent in read + render + write")
        notes.append("the loopback plugin's pointer moves in \(granularity)-frame steps (granularity), in both modes")
        if soak { notes.append("soak: no background load and no JACK run beside it") }
        return (rows, notes, measurements)
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    private func rows(for m: Measurement) -> [BenchmarkRow] {
        let ms = Double(m.period) / 48
        let what = soak
            ? "xruns, period \(m.period) × \(bufferPeriods) (\(String(format: "%.2f", ms)) ms), \(Int(seconds)) s soak, no load, \(m.mode.label)"
            : "xruns, period \(m.period) × \(bufferPeriods) (\(String(format: "%.2f", ms)) ms), \(Int(seconds)) s, other core busy, \(m.mode.label)"
        return [
            BenchmarkRow(
                metric: what, unit: "xruns", sonora: Double(m.xruns),
                anchor: m.jackXruns.map { _ in "JACK2 dummy backend, same period and load" } ?? (soak ? "goal zero" : "JACK2 not available: goal zero"),
                anchorValue: Double(m.period >= 256 ? 0 : (m.jackXruns ?? 0)), better: .lower),
            BenchmarkRow(
                metric: "wake-up lateness p50, period \(m.period), \(m.mode.label)", unit: "µs", sonora: m.latenessP50 / 1000,
                anchor: m.jackLatenessP50 == nil ? "the period itself" : "JACK2 client's wake-up lateness p50, same slices",
                anchorValue: (m.jackLatenessP50 ?? ms * 1_000_000) / 1000, better: .lower),
            BenchmarkRow(
                metric: "wake-up lateness p99, period \(m.period), \(m.mode.label)", unit: "µs", sonora: m.latenessP99 / 1000,
                anchor: m.jackLatenessP99 == nil ? "the period itself" : "JACK2 client's wake-up lateness p99, same slices",
                anchorValue: (m.jackLatenessP99 ?? ms * 1_000_000) / 1000, better: .lower),
            BenchmarkRow(
                metric: "wake-up lateness max, period \(m.period), \(m.mode.label)", unit: "µs", sonora: m.latenessMax / 1000,
                anchor: m.jackLatenessMax == nil ? "the period itself" : "JACK2 client's wake-up lateness max, same slices",
                anchorValue: (m.jackLatenessMax ?? ms * 1_000_000) / 1000, better: .lower),
            BenchmarkRow(
                metric: "I/O-thread load max, period \(m.period), \(m.mode.label)", unit: "% of period", sonora: m.loadMax * 100,
                anchor: "the whole period", anchorValue: 100, better: .lower),
        ]
    }

    private func measureSonora(period: Int, mode: Mode, seconds: Double) throws -> (Measurement, [Double]) {
        var configuration = AudioDeviceConfiguration(periodFrames: period, periods: bufferPeriods, realtimePriority: priority, locksMemory: true)
        configuration.wakeUp = mode.wakeUp
        let device = try ALSADevice(
            capture: "bench-io", playback: "bench-io", configuration: configuration,
            alsaConfiguration: "pcm.bench-io { type sonoraloop loop \"bench-io\" granularity \(min(granularity, period)) }")
        let cycles = Int(seconds * 48000) / period
        let recorder = WakeRecorder(capacity: cycles + 16)
        try device.start(IOProcedure(recorder))
        while recorder.count.load(ordering: .acquiring) < cycles { usleep(20_000) }
        device.stop()
        let statistics = device.statistics
        let lateness = recorder.lateness(periodSeconds: Double(period) / 48000, bufferPeriods: bufferPeriods)
        var measurement = Measurement(period: period, mode: mode, xruns: statistics.xruns, loadMean: statistics.loadMean, loadMax: statistics.loadMax, cycles: statistics.cycles)
        measurement.timerFallbacks = device.timerFallbackCycles
        return (measurement, lateness)
    }

    /// Runs jackd (SCHED_FIFO at the same priority) on the dummy backend for the same time,
    /// with one client recording its wake-ups (`jack-wakes`); counts the xruns jackd logs.
    /// nil when JACK cannot run here.
    private func measureJack(period: Int, seconds: Double) -> (xruns: Int, lateness: [Double])? {
        guard let script = Self.jackScript else { return nil }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-jack-\(getpid()).log").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["48000", "\(period)", Self.executablePath, "jack-wakes", "--seconds", "\(seconds)", "--period", "\(period)"]
        var environment = ProcessInfo.processInfo.environment
        environment["SONORA_JACK_LOG"] = log
        environment["SONORA_JACK_REALTIME"] = "\(priority)"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        defer { try? FileManager.default.removeItem(atPath: log) }
        guard process.terminationStatus == 0, let text = try? String(contentsOfFile: log, encoding: .utf8) else { return nil }
        let xruns = text.components(separatedBy: "\n").filter { $0.contains("XRun") || $0.contains("xrun") }.count
        let report = try? JSONDecoder().decode(JackWakesReport.self, from: printed)
        return (xruns, report?.latenessNanoseconds ?? [])
    }

    /// This executable (jack-wakes runs inside the JACK script).
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// scripts/with-jack-dummy.sh, found by walking up from the executable.
    /// Runs this program with `arguments` inside scripts/with-jack-dummy.sh (a private jackd on
    /// the dummy backend at `rate` and `period`): its standard output, or why it failed (exit
    /// 77: jackd cannot run here, with the script's reason).
    static func runBesideJack(rate: Int, period: Int, _ arguments: [String], environment: [String: String] = [:]) -> Result<Data, AudioError> {
        guard let script = jackScript else { return .failure(AudioError(.unspecified, "scripts/with-jack-dummy.sh not found above sonora-bench")) }
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return .failure(AudioError(.unspecified, "cannot find sonora-bench's own path"))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["\(rate)", "\(period)", executable] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { return .failure(AudioError(.unspecified, "cannot run \(script): \(error)")) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let reason = message.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            return .failure(AudioError(.unspecified, process.terminationStatus == 77 ? reason : "\(arguments.first ?? "") beside jackd failed (exit \(process.terminationStatus)): \(reason)"))
        }
        return .success(data)
    }

    static var jackScript: String? { script(named: "with-jack-dummy.sh") }

    /// scripts/NAME, found by walking up from the executable.
    static func script(named name: String) -> String? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = directory.appendingPathComponent("scripts/\(name)").path
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
        return Self.lateness(of: Array(times.prefix(n)), periodSeconds: periodSeconds, bufferPeriods: bufferPeriods)
    }

    /// The same fit for any series of wake-up times (JACK's client, `jack-wakes`), so both are judged alike.
    static func lateness(of times: [UInt64], periodSeconds: Double, bufferPeriods: Int) -> [Double] {
        let n = times.count
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
