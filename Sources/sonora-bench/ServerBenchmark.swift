import CServerBenchAnchor
import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// `sonora-bench server` (issue 19): what attaching through the appliance costs, against the
/// same sources mixed in-process and against JACK2.
/// - In-process: `clients` render callbacks (jack_simple_client's sine) on the inputs of one
///   `MultiChannelMixerUnit` in a graph headed by an `IOUnit` on the timer-paced null device:
///   the process's CPU per cycle; and the round trip of a duplex `sonoraloop` device
///   (`RoundTripMeasurement`), the baseline of the appliance's added latency.
/// - JACK2: `clients` jack_simple_client-style clients (threads of one process, each its own
///   jack_client_t) on jackd's dummy backend at the same rate and period, SCHED_FIFO at the same
///   priority: jackd's CPU plus the clients' per client per cycle; the frames an impulse takes
///   through a chain of them (the latency JACK adds per hop).
/// - Appliance: `sonora run` (beside sonora-bench) with a session section and a `clients`
///   node on the null device, `clients` client programs each playing the sine through a
///   `sonora:` device: the appliance's CPU plus the programs' per cycle; and a client's
///   duplex `sonora:` round trip through the appliance on the same sonoraloop device.
/// In-process, JACK (and the appliance) alternate in slices, so all see the same background.
struct ServerBenchmark {
    var clients: Int
    var seconds: Double
    var rounds: Int
    var period: Int
    var priority: Int32 = 70
    static let rate = 48000

    /// CPU over a span of cycles (all processes involved, summed).
    struct CPUSample {
        var cpuSeconds = 0.0
        var cycles = 0
        var xruns = 0
        /// Of `cpuSeconds`, the appliance process's own (the rest: its client programs').
        var applianceCPUSeconds = 0.0
        /// The appliance's CPU by thread name (its I/O thread, its session server's loop …).
        var applianceThreads: [String: Double] = [:]
        /// Threads of the appliance that ended inside a measured window (their time there is not in `applianceThreads`).
        var endedThreads: [String] = []

        mutating func add(_ other: CPUSample) {
            cpuSeconds += other.cpuSeconds
            cycles += other.cycles
            xruns += other.xruns
            applianceCPUSeconds += other.applianceCPUSeconds
            applianceThreads.merge(other.applianceThreads, uniquingKeysWith: +)
            endedThreads += other.endedThreads
        }

        /// Microseconds of CPU per cycle per source.
        func perSourcePerCycle(_ sources: Int) -> Double { cpuSeconds * 1e6 / Double(max(cycles, 1)) / Double(sources) }
    }

    /// A row that could not be measured in this run, and why (printed instead of the row).
    struct PendingRow {
        var metric: String
        var unit: String
        var goal: String
        var reason: String
    }

    func run(progress: (String) -> Void) throws -> (rows: [BenchmarkRow], pending: [PendingRow], notes: [String]) {
        var rows: [BenchmarkRow] = []
        var pending: [PendingRow] = []
        var notes: [String] = []
        var inProcess = CPUSample()
        var jack = CPUSample()
        var jackRuns: [JackAnchorReport] = []
        var jackProblem: String?
        var appliance = CPUSample()
        var floor = CPUSample()
        for round in 0..<rounds {
            progress("round \(round + 1)/\(rounds): \(clients) sources mixed in-process, then \(clients) JACK2 clients, then \(clients) client streams on the appliance, then the floor (\(clients) processes woken a cycle, nothing else), \(seconds) s each …")
            inProcess.add(try measureInProcess())
            switch measureJack() {
            case .success(let report) where report.jackdCPUSeconds < 0:
                // Without jackd's share JACK's figure would look cheaper than it is: no row.
                jackProblem = "jackd's CPU time could not be read (SONORA_JACK_PID from scripts/with-jack-dummy.sh)"
            case .success(let report):
                jackRuns.append(report)
                jack.add(CPUSample(cpuSeconds: report.clientsCPUSeconds + report.jackdCPUSeconds, cycles: report.cycles, xruns: report.xruns))
            case .failure(let problem):
                jackProblem = problem.message
            }
            appliance.add(try measureApplianceCPU(progress: progress))
            floor.add(try measureWakeFloor())
        }
        // A reference for the appliance's client side: as many programs, each playing the sine
        // on a null device of its own (an I/O thread woken each period, as a client's is).
        progress("\(clients) client programs, each on its own null device, \(seconds) s …")
        let programs = try runStreamClients(device: "null", processes: clients, devicesPerProcess: 1)
        let programsPerCycle = programs.reduce(0) { $0 + $1.cpuPerCycle }
        let inProcessPerSource = inProcess.perSourcePerCycle(clients)
        let jackPerClient = jackProblem == nil ? jack.perSourcePerCycle(clients) : nil
        let jackAnchor = "JACK2 dummy backend, \(clients) jack_simple_client-style clients: CPU per client per cycle, same run"

        if let jackPerClient {
            rows.append(BenchmarkRow(
                metric: "\(clients) sources mixed in-process (one graph, null device): CPU per source per cycle", unit: "µs",
                sonora: inProcessPerSource, anchor: jackAnchor, anchorValue: jackPerClient, better: .lower))
        } else {
            notes.append("JACK2 not measured: \(jackProblem ?? "unknown")")
        }

        // The round trip in-process, the baseline of the appliance's added latency.
        var inProcessRoundTrip: Double?
        if ALSAConfiguration.loopPluginPath != nil {
            progress("round trip in-process on sonoraloop (\(period) × 2) …")
            // A loaded machine may xrun; up to three tries for a clean run.
            var result = try measureInProcessRoundTrip()
            for _ in 1..<3 where result.xruns > 0 { result = try measureInProcessRoundTrip() }
            inProcessRoundTrip = result.xruns == 0 ? result.measuredFrames : nil
            if result.xruns > 0 {
                notes.append("round trip in-process: left out, the run had \(result.xruns) xruns")
            } else if let frames = result.measuredFrames {
                rows.append(BenchmarkRow(
                    metric: "round trip in-process (duplex sonoraloop, \(period) × 2): the appliance's baseline", unit: "frames",
                    sonora: frames, anchor: "the device's buffer, periods × period", anchorValue: Double(result.theoreticalFrames), better: .lower))
            } else {
                notes.append("round trip in-process: no signal heard (xruns \(result.xruns))")
            }
        } else {
            notes.append("round trip in-process: the sonoraloop plugin is not built beside sonora-bench (swift build -c release --product asound_module_pcm_sonoraloop)")
        }

        // The appliance's rows (goals of issue 19).
        let hop = jackRuns.first.flatMap { $0.chainLatencyFrames >= 0 ? Double($0.chainLatencyFrames) / Double($0.chainHops) : nil }
        let latencyMetric = "round trip through the appliance − in-process, same device (\(period) × 2)"
        let latencyGoal = "one period, \(period) frames (goal)" + (hop.map { String(format: "; JACK2 adds %.0f frames per client hop", $0) } ?? "")
        if let inProcessRoundTrip {
            progress("round trip through the appliance on sonoraloop (\(period) × 2), a client's duplex sonora: device …")
            // Up to three tries for a clean run (xruns on a loaded machine); a failure is
            // reported, with the appliance's last words, if the last try fails too.
            var through: (frames: Double?, note: String?) = (nil, nil)
            for attempt in 1...3 where through.frames == nil {
                do {
                    through = try measureApplianceRoundTrip()
                } catch {
                    guard attempt < 3 else { throw error }
                    notes.append("round trip through the appliance, try \(attempt): \(error)")
                }
            }
            if let frames = through.frames {
                rows.append(BenchmarkRow(metric: latencyMetric, unit: "frames", sonora: frames - inProcessRoundTrip,
                                         anchor: latencyGoal, anchorValue: Double(period), better: .lower))
                notes.append(String(format: "round trip through the appliance: %.3f frames (in-process %.3f)", frames, inProcessRoundTrip))
            } else {
                pending.append(PendingRow(metric: latencyMetric, unit: "frames", goal: latencyGoal, reason: through.note ?? "no result"))
            }
        } else {
            pending.append(PendingRow(metric: latencyMetric, unit: "frames", goal: latencyGoal, reason: "no in-process round trip to compare with (see the notes)"))
        }
        let ratioMetric = "\(clients) client streams on the appliance: CPU ÷ \(clients) in-process sources"
        let ratioGoal = "\(clients) sources mixed in one graph in-process, same run (goal ≤ 1.15)"
        let perClientMetric = "\(clients) client streams on the appliance: CPU per client per cycle"
        rows.append(BenchmarkRow(metric: ratioMetric, unit: "ratio", sonora: appliance.perSourcePerCycle(clients) / inProcessPerSource,
                                 anchor: ratioGoal, anchorValue: 1.15, better: .lower))
        // The same ratio for the least any design with a woken process per client pays: the
        // in-process work plus the wake-ups alone. Above 1.15, the goal is out of reach of
        // that design, whatever the appliance does.
        let floorPerSource = floor.perSourcePerCycle(clients)
        rows.append(BenchmarkRow(
            metric: "\(clients) sources in-process + the wake-ups alone of \(clients) processes woken a cycle (the floor of one process per client) ÷ \(clients) in-process sources",
            unit: "ratio", sonora: (inProcessPerSource + floorPerSource) / inProcessPerSource, anchor: ratioGoal, anchorValue: 1.15, better: .lower))
        notes.append(String(format: "floor: %d processes each blocked in one eventfd read, one SCHED_FIFO thread writing all %d eventfds every %d frames, no audio: %.2f µs per cycle (%.2f per process; the waker %.2f, the processes %.2f) over %d cycles; the 1.15 goal allows %.2f µs per cycle beyond the in-process %.2f; the appliance spends %.2f beyond it, %.2f × the floor",
                            clients, clients, period, floorPerSource * Double(clients), floorPerSource, floor.applianceCPUSeconds * 1e6 / Double(max(floor.cycles, 1)),
                            (floor.cpuSeconds - floor.applianceCPUSeconds) * 1e6 / Double(max(floor.cycles, 1)), floor.cycles,
                            0.15 * inProcessPerSource * Double(clients), inProcessPerSource * Double(clients),
                            (appliance.perSourcePerCycle(clients) - inProcessPerSource) * Double(clients),
                            (appliance.perSourcePerCycle(clients) - inProcessPerSource) / max(floorPerSource, 1e-9)))
        if let jackPerClient {
            rows.append(BenchmarkRow(metric: perClientMetric, unit: "µs", sonora: appliance.perSourcePerCycle(clients),
                                     anchor: jackAnchor, anchorValue: jackPerClient, better: .lower))
        } else {
            pending.append(PendingRow(metric: perClientMetric, unit: "µs", goal: jackAnchor, reason: "JACK2 not measured (see the notes)"))
        }
        let applianceOwn = appliance.applianceCPUSeconds * 1e6 / Double(max(appliance.cycles, 1))
        let applianceAll = appliance.cpuSeconds * 1e6 / Double(max(appliance.cycles, 1))
        notes.append(String(format: "appliance: %d client programs, %d cycles: sonora run %.2f µs per cycle + client programs %.2f µs per cycle (%.2f µs per program) = %.2f µs per cycle; xruns %d",
                            clients, appliance.cycles, applianceOwn, applianceAll - applianceOwn, (applianceAll - applianceOwn) / Double(clients), applianceAll, appliance.xruns))
        let threads = appliance.applianceThreads.sorted { $0.value > $1.value }
            .map { String(format: "%@ %.2f µs", $0.key, $0.value * 1e6 / Double(max(appliance.cycles, 1))) }
        if !threads.isEmpty {
            let ended = appliance.endedThreads.isEmpty ? ""
                : "; ended while measured, so not split out (in the total only): " + appliance.endedThreads.joined(separator: ", ")
            notes.append("sonora run's threads, CPU per cycle: " + threads.joined(separator: ", ") + ended)
        }

        notes.append(String(format: "in-process: %d sources, %.3f ms CPU over %d cycles (%.2f µs per cycle, %.2f %% of one core); device xruns %d",
                            clients, inProcess.cpuSeconds * 1000, inProcess.cycles, inProcess.cpuSeconds * 1e6 / Double(max(inProcess.cycles, 1)),
                            inProcess.cpuSeconds * 1e6 / Double(max(inProcess.cycles, 1)) / (Double(period) / Double(Self.rate) * 1e6) * 100, inProcess.xruns))
        notes.append(String(format: "%d programs, each on its own null device (no mixing): %.2f µs CPU per program per cycle, %.2f µs for all (%d xruns)",
                            clients, programsPerCycle * 1e6 / Double(clients), programsPerCycle * 1e6, programs.reduce(0) { $0 + $1.xruns }))
        if !jackRuns.isEmpty {
            let clientsCPU = jackRuns.reduce(0) { $0 + $1.clientsCPUSeconds }
            let jackdCPU = jackRuns.reduce(0) { $0 + max($1.jackdCPUSeconds, 0) }
            let idle = jackRuns.map(\.jackdIdleCPUPerCycle).filter { $0 >= 0 }
            notes.append(String(format: "JACK2: %d clients (threads of one process), %d cycles: jackd %.3f ms + clients %.3f ms CPU (%.2f µs per cycle); jackd alone %@ per cycle; jack_cpu_load mean %.1f %%; xruns %d",
                                clients, jack.cycles, jackdCPU * 1000, clientsCPU * 1000, jack.cpuSeconds * 1e6 / Double(max(jack.cycles, 1)),
                                idle.isEmpty ? "n/a" : String(format: "%.2f µs", idle.reduce(0, +) / Double(idle.count) * 1e6),
                                jackRuns.reduce(0) { $0 + $1.dspLoadMean } / Double(jackRuns.count), jack.xruns))
            if let first = jackRuns.first {
                notes.append(first.chainLatencyFrames >= 0
                    ? "JACK2 chain of \(clients) clients (\(first.chainHops) hops, each copying input to output): an impulse reached the last client \(first.chainLatencyFrames) frames after the first wrote it"
                    : "JACK2 chain: the impulse was not heard within 1 s")
            }
        }
        return (rows, pending, notes)
    }

    // MARK: In-process

    /// `clients` sources into one mixer in one graph on the timer-paced null device, `seconds`:
    /// the process's CPU time (its I/O thread; the rest of the process sleeps) over the cycles.
    func measureInProcess() throws -> CPUSample {
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(sampleRate: Self.rate, periodFrames: period, periods: 2, inputChannels: 0, outputChannels: 2, realtimePriority: priority),
            mode: .null)
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(device)
        let ioNode = graph.addNode(io)
        let mixer = MultiChannelMixerUnit(inputs: clients)
        let mixerNode = graph.addNode(mixer)
        let sources = (0..<clients).map { ServerBenchSourceCallback(offset: $0 * 13) }
        for (input, source) in sources.enumerated() { try graph.setRenderCallback(source, node: mixerNode, input: input) }
        try graph.connect(mixerNode, bus: 0, to: ioNode, input: 0)
        try graph.initialize()
        defer {
            graph.stop()
            graph.uninitialize()
        }
        try graph.start()
        usleep(500_000)  // past the start: page faults, first cycles
        let before = (cpu: sonora_process_cpu_seconds(0), statistics: device.statistics)
        usleep(useconds_t(seconds * 1_000_000))
        let after = (cpu: sonora_process_cpu_seconds(0), statistics: device.statistics)
        return CPUSample(cpuSeconds: after.cpu - before.cpu, cycles: after.statistics.cycles - before.statistics.cycles,
                         xruns: after.statistics.xruns - before.statistics.xruns)
    }

    /// The round trip of a duplex sonoraloop device, `period` × 2, in-process (what a client's
    /// round trip through the appliance on the same device is compared with).
    func measureInProcessRoundTrip() throws -> RoundTripMeasurement.Result {
        let loop = "sonoraloop:bench-server-\(getpid())"
        let device = try ALSADevice(capture: loop, playback: loop, configuration: AudioDeviceConfiguration(
            sampleRate: Self.rate, periodFrames: period, periods: 2, inputChannels: 1, outputChannels: 1,
            sampleFormat: .float32LE, requiresExactPeriod: true, realtimePriority: priority))
        return try RoundTripMeasurement(sampleRate: Self.rate, seconds: 2, maximumLatency: Self.rate / 10).run(on: device)
    }

    // MARK: JACK2

    /// One JACK slice: jackd on the dummy backend in a private mount namespace
    /// (scripts/with-jack-dummy.sh), this program's hidden `jack-clients` command inside it.
    func measureJack() -> Result<JackAnchorReport, AudioError> {
        IOBenchmark.runBesideJack(
            rate: Self.rate, period: period, ["jack-clients", "--clients", "\(clients)", "--seconds", "\(seconds)"],
            environment: ["SONORA_JACK_REALTIME": "\(priority)"]
        ).flatMap { data in
            guard let report = try? JSONDecoder().decode(JackAnchorReport.self, from: data) else {
                return .failure(AudioError(.unspecified, "JACK2 anchor failed: its report is not JSON"))
            }
            return .success(report)
        }
    }

    // MARK: The appliance

    /// CPU of `clients` client streams through the appliance over one slice of `seconds`:
    /// `sonora run` on the timer-paced null device (same rate, period × 2, stereo, SCHED_FIFO
    /// `priority` as the in-process graph), a `clients` node straight to its output, and
    /// `clients` client programs (one process each, each one `sonora:` device playing the
    /// sine). Counted: the appliance process's CPU (all its threads: I/O, session server,
    /// control) over its cycles, plus each client program's CPU per cycle (all its threads)
    /// times those cycles — everything serving the clients costs.
    func measureApplianceCPU(progress: (String) -> Void) throws -> CPUSample {
        let appliance = try ServerBenchAppliance(name: "cpu", config: """
            engine: {sample_rate: \(Self.rate), period: \(period), periods: 2, channels: 2}
            device: {playback: "null", priority: \(priority)}
            nodes:
              - {id: clients, kind: clients}
            connections:
              - {from: clients, to: output}

            """)
        defer { appliance.stop() }
        progress("\(clients) client programs on the appliance (sonora run, pid \(appliance.pid)), \(seconds) s …")
        // The clients run a second longer than the appliance's span, so all of them play
        // through it whatever the spread of their start.
        let running = try launchStreamClients(device: "sonora:\(appliance.sessionSocket)", processes: clients, devicesPerProcess: 1, seconds: seconds + 1)
        do {
            try appliance.waitForPlaybackStreams(clients, timeout: 20)
        } catch {
            running.forEach { $0.process.terminate() }
            _ = try? collectStreamClients(running)
            throw error
        }
        usleep(500_000)  // past the clients' start, as their own warm-up
        let before = try (status: appliance.status(), cpu: sonora_process_cpu_seconds(appliance.pid), threads: appliance.threadCPUSeconds())
        usleep(useconds_t(seconds * 1_000_000))
        let after = try (status: appliance.status(), cpu: sonora_process_cpu_seconds(appliance.pid), threads: appliance.threadCPUSeconds())
        let programs = try collectStreamClients(running)
        guard before.cpu >= 0, after.cpu >= 0 else { throw AudioError(.unspecified, "the appliance's CPU time could not be read") }
        let cycles = after.status.cycles - before.status.cycles
        let clientsPerCycle = programs.reduce(0) { $0 + $1.cpuPerCycle }
        let split = ServerBenchAppliance.threadCPUSeconds(from: before.threads, to: after.threads)
        return CPUSample(cpuSeconds: after.cpu - before.cpu + clientsPerCycle * Double(cycles), cycles: cycles,
                         xruns: after.status.xruns - before.status.xruns + programs.reduce(0) { $0 + $1.xruns },
                         applianceCPUSeconds: after.cpu - before.cpu,
                         applianceThreads: split.byName, endedThreads: split.ended)
    }

    /// The floor (`sonora_wake_floor_run`): `clients` processes woken by eventfd every period,
    /// nothing else. `applianceCPUSeconds` holds the waker thread's share.
    func measureWakeFloor() throws -> CPUSample {
        var result = sonora_wake_floor_result()
        let status = sonora_wake_floor_run(Int32(clients), Double(period) / Double(Self.rate), seconds, 70, &result)
        guard status == 0 else {
            let message = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw AudioError(.unspecified, "the wake-up floor could not be measured: \(message)")
        }
        return CPUSample(cpuSeconds: result.waker_cpu_seconds + result.clients_cpu_seconds, cycles: result.cycles, xruns: 0,
                         applianceCPUSeconds: result.waker_cpu_seconds)
    }

    /// Spawns `processes` client programs (this program's hidden `stream-clients`), each
    /// opening `devicesPerProcess` devices named `device` and playing the sine for `seconds`
    /// (default: the slice); waits for all and returns their reports.
    func runStreamClients(device: String, processes: Int, devicesPerProcess: Int, seconds: Double? = nil) throws -> [StreamClientsReport] {
        try collectStreamClients(try launchStreamClients(device: device, processes: processes, devicesPerProcess: devicesPerProcess, seconds: seconds ?? self.seconds))
    }

    struct RunningClients {
        var process: Process
        var output: Pipe
        var errors: Pipe
    }

    func launchStreamClients(device: String, processes: Int, devicesPerProcess: Int, seconds: Double) throws -> [RunningClients] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var running: [RunningClients] = []
        for _ in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["stream-clients", "--device", device, "--clients", "\(devicesPerProcess)", "--seconds", "\(seconds)", "--period", "\(period)"]
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            do {
                try process.run()
            } catch {
                running.forEach { $0.process.terminate() }
                _ = try? collectStreamClients(running)
                throw error
            }
            running.append(RunningClients(process: process, output: output, errors: errors))
        }
        return running
    }

    /// Waits for every client program; their reports, or the first failure.
    func collectStreamClients(_ running: [RunningClients]) throws -> [StreamClientsReport] {
        var reports: [StreamClientsReport] = []
        var failure: String?
        for client in running {
            let data = client.output.fileHandleForReading.readDataToEndOfFile()
            let message = String(decoding: client.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            client.process.waitUntilExit()
            if client.process.terminationStatus == 0, let report = try? JSONDecoder().decode(StreamClientsReport.self, from: data) {
                reports.append(report)
            } else {
                failure = message.split(separator: "\n").last.map(String.init) ?? "exit status \(client.process.terminationStatus)"
            }
        }
        if let failure { throw AudioError(.unspecified, "a client program failed: \(failure)") }
        return reports
    }

    /// The round trip, frames, of a client's duplex `sonora:` device (one channel each way)
    /// through the appliance on the duplex sonoraloop device of `measureInProcessRoundTrip()`
    /// (`period` × 2, mono): the loop's capture goes to the `clients` node's input (every
    /// capture stream) and the clients' playback to the loop's output. Nil (with a note)
    /// when the appliance had xruns or nothing was heard.
    func measureApplianceRoundTrip() throws -> (frames: Double?, note: String?) {
        let loop = "sonoraloop:bench-appliance-\(getpid())"
        let appliance = try ServerBenchAppliance(name: "loop", config: """
            engine: {sample_rate: \(Self.rate), period: \(period), periods: 2, channels: 1}
            device: {playback: "\(loop)", capture: "\(loop)", priority: \(priority)}
            nodes:
              - {id: clients, kind: clients}
            connections:
              - {from: input, to: clients}
              - {from: clients, to: output}

            """)
        defer { appliance.stop() }
        do {
            return try measureRoundTrip(through: appliance)
        } catch {
            let state = appliance.isRunning ? "running" : "exited"
            let audio = error as? AudioError
            throw AudioError(audio?.code ?? .unspecified, "\(audio?.message ?? "\(error)") (the appliance: \(state); its last words: \(appliance.lastLogLine ?? "none"))")
        }
    }

    private func measureRoundTrip(through appliance: ServerBenchAppliance) throws -> (frames: Double?, note: String?) {
        // A program that records through the appliance activates a session that may
        // (as AudioSession's playAndRecord would); the appliance groups this connection's
        // session and the device's streams by pid.
        let session = try ApplianceConnection.connect(path: appliance.sessionSocket, name: "sonora-bench")
        defer { session.close() }
        _ = try session.request("session_activate", ["category": .string("playAndRecord"), "options": .array([])])
        let before = try appliance.status()
        let device = try AudioDevices.open(named: "sonora:\(appliance.sessionSocket)", configuration: AudioDeviceConfiguration(
            sampleRate: Self.rate, periodFrames: period, periods: 2, inputChannels: 1, outputChannels: 1, realtimePriority: priority))
        let result = try RoundTripMeasurement(sampleRate: Self.rate, seconds: 2, maximumLatency: Self.rate / 10).run(on: device)
        let after = try appliance.status()
        let xruns = after.xruns - before.xruns
        if xruns > 0 || result.xruns > 0 {
            return (nil, "round trip through the appliance: left out, the run had \(xruns) xruns in the appliance and \(result.xruns) in the client")
        }
        guard let frames = result.measuredFrames else { return (nil, "round trip through the appliance: no signal heard") }
        return (frames, nil)
    }
}

/// What `sonora-bench jack-clients` prints (one JSON object): `sonora_jack_anchor_result`.
struct JackAnchorReport: Codable {
    var sampleRate: Int
    var period: Int
    var cycles: Int
    var elapsedSeconds: Double
    var jackdCPUSeconds: Double
    var clientsCPUSeconds: Double
    var jackdIdleCPUPerCycle: Double
    var dspLoadMean: Double
    var xruns: Int
    var chainLatencyFrames: Int
    var chainHops: Int

    init(_ result: sonora_jack_anchor_result) {
        sampleRate = Int(result.sample_rate)
        period = Int(result.period)
        cycles = result.cycles
        elapsedSeconds = result.elapsed_seconds
        jackdCPUSeconds = result.jackd_cpu_seconds
        clientsCPUSeconds = result.clients_cpu_seconds
        jackdIdleCPUPerCycle = result.jackd_idle_cpu_per_cycle
        dspLoadMean = result.dsp_load_mean
        xruns = Int(result.xruns)
        chainLatencyFrames = result.chain_latency_frames
        chainHops = Int(result.chain_hops)
    }
}
