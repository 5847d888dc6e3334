import ArgumentParser
import Foundation
import SonoraHAL

struct IOBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "io",
        abstract: "The I/O thread at small periods: xruns, wake-up lateness and load in poll and timer modes, beside JACK2.",
        discussion: """
            For each period (48 kHz, 2 periods), runs a duplex stream on Sonora's loopback
            ALSA plugin (its pointer moving in --granularity-frame steps, as a card's DMA
            pointer does) with the other core kept busy — once per wake-up mode (poll:
            the device's interrupt; timer: a timer predicted from the pointer, --headroom-us
            early) — and JACK2's dummy server at the same period and load (SCHED_FIFO at
            the same priority, in a private /dev/shm), counting the xruns it logs —
            alternating in slices of at most 10 s, so all see the same background. Goals:
            no more xruns than JACK at every period, none at 256 frames (anchor_value is
            the goal; lower is better). Needs root for SCHED_FIFO and for JACK's private
            mount; without jackd the JACK column is missing and the goal is zero.

            --soak SECONDS instead runs 256 frames × 2 for SECONDS in one piece per mode,
            with no background load and no JACK (the goal: 0 xruns on a quiet machine).

            Examples:
              sonora-bench io
              sonora-bench io --seconds 10 --periods 128,256 --json
              sonora-bench io --wake-up timer --headroom-us 200 --seconds 20
              sonora-bench io --soak 600 --wake-up timer
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds per period size (and per JACK run).")
    var seconds = 60.0

    @Option(help: "Period sizes, comma-separated.")
    var periods = "64,128,256"

    @Option(help: "Periods in the buffer.")
    var bufferPeriods = 2

    @Option(help: "SCHED_FIFO priority of the I/O thread and of jackd.")
    var priority: Int32 = 70

    @Option(help: "Wake-up modes to measure, comma-separated: poll, timer.")
    var wakeUp = "poll,timer"

    @Option(help: "Timer mode: microseconds before the predicted period the thread wakes (0…20000).")
    var headroomUs = AudioDeviceConfiguration.WakeUp.defaultHeadroomMicroseconds

    @Option(help: "The loopback plugin's pointer step in frames (1…8192, at most the period).")
    var granularity = 32

    @Option(help: "Run 256 × 2 for this many seconds per mode on a quiet machine (no load, no JACK) instead.")
    var soak: Double?

    func validate() throws {
        guard seconds >= 1 && seconds <= 3600 else { throw ValidationError("--seconds must be in 1…3600") }
        guard parsedPeriods.count > 0 && parsedPeriods.allSatisfy({ $0 >= 16 && $0 <= 8192 }) else {
            throw ValidationError("--periods must list sizes in 16…8192, e.g. 64,128,256")
        }
        guard let modes = parsedModes, !modes.isEmpty else { throw ValidationError("--wake-up must list poll and/or timer, e.g. poll,timer") }
        guard AudioDeviceConfiguration.WakeUp.headroomRange.contains(headroomUs) else { throw ValidationError("--headroom-us must be in 0…20000") }
        guard granularity >= 1 && granularity <= 8192 else { throw ValidationError("--granularity must be in 1…8192") }
        guard granularity <= (soak == nil ? parsedPeriods.min() ?? 0 : 256) else {
            throw ValidationError("--granularity \(granularity) is more than a period; the pointer cannot step past a period")
        }
        if let soak, !(soak >= 1 && soak <= 86_400) { throw ValidationError("--soak must be in 1…86400 seconds") }
    }

    var parsedPeriods: [Int] { periods.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    var parsedModes: [IOBenchmark.Mode]? {
        var modes: [IOBenchmark.Mode] = []
        for word in wakeUp.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            switch word {
            case "poll": modes.append(.poll)
            case "timer": modes.append(.timer(headroomMicroseconds: headroomUs))
            default: return nil
            }
        }
        return modes
    }

    func run() throws {
        let benchmark = IOBenchmark(
            periods: soak == nil ? parsedPeriods : [256], seconds: soak ?? seconds, bufferPeriods: bufferPeriods, priority: priority,
            modes: parsedModes ?? [.poll], granularity: granularity, soak: soak != nil)
        let (rows, notes, measurements) = try benchmark.run { message in
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
        var allNotes = notes
        for m in measurements {
            allNotes.append(String(
                format: "period %d, %@: %d cycles, xruns %d (JACK %@), lateness p50 %.0f µs p99 %.0f µs p99.9 %.0f µs max %.0f µs, load mean %.1f %% max %.1f %%%@",
                m.period, m.mode.label, m.cycles, m.xruns, m.jackXruns.map { "\($0)" } ?? "n/a", m.latenessP50 / 1000, m.latenessP99 / 1000,
                m.latenessP999 / 1000, m.latenessMax / 1000, m.loadMean * 100, m.loadMax * 100,
                m.timerFallbacks > 0 ? ", \(m.timerFallbacks) cycles fell back to poll" : ""))
            allNotes.append("period \(m.period), \(m.mode.label): worst wake-up per slice at cycle " + m.worstWakeUps.map {
                "\($0.cycle) of \($0.of) (\(Int($0.microseconds)) µs)" }.joined(separator: ", "))
        }
        for period in Set(measurements.map(\.period)).sorted() {
            guard let m = measurements.first(where: { $0.period == period }), let p50 = m.jackLatenessP50, let p99 = m.jackLatenessP99 else { continue }
            allNotes.append(String(
                format: "period %d, JACK2 client (process callback): lateness p50 %.0f µs p99 %.0f µs max %.0f µs", period, p50 / 1000, p99 / 1000,
                (m.jackLatenessMax ?? 0) / 1000))
        }
        BenchmarkReport.print(rows, json: json, notes: allNotes)
    }
}
