import ArgumentParser
import CServerBenchAnchor
import Foundation
import SonoraHAL

/// Client programs for `sonora-bench server`: opens `--clients` devices by name (the
/// appliance's `sonora:SOCKET`, or any other name such as `null`), each playing
/// jack_simple_client's sine (`ServerBenchClientCycle`), and prints one JSON object, a
/// `StreamClientsReport`: this process's CPU per cycle of its devices.
struct StreamClientsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream-clients",
        abstract: "(internal) client devices playing jack_simple_client's sine; prints their CPU per cycle as JSON.",
        discussion: """
            Example (what `sonora-bench server` runs once per client program):
              sonora-bench stream-clients --device sonora:/run/sonora/server.sock --clients 1 --seconds 10
              sonora-bench stream-clients --device null --clients 16 --seconds 2
            """,
        shouldDisplay: false
    )

    @Option(help: "Device name each client opens (DeviceSpecifier names).")
    var device = "null"

    @Option(help: "Devices (client streams) in this process, each with its own I/O thread.")
    var clients = 1

    @Option(help: "Seconds to measure, after 0.5 s of warm-up.")
    var seconds = 10.0

    @Option(help: "Period asked of each device, frames (48 kHz, 2 periods; the appliance's own wins).")
    var period = 256

    func validate() throws {
        guard clients >= 1 && clients <= 256 else { throw ValidationError("--clients must be in 1…256") }
        guard seconds > 0 && seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
        guard period >= 16 && period <= 8192 else { throw ValidationError("--period must be in 16…8192") }
    }

    func run() throws {
        let configuration = AudioDeviceConfiguration(
            sampleRate: ServerBenchmark.rate, periodFrames: period, periods: 2, inputChannels: 0, outputChannels: 2, realtimePriority: 70)
        var devices: [any AudioDevice] = []
        var targets: [ServerBenchClientCycle] = []
        defer { devices.forEach { $0.stop() } }
        do {
            for index in 0..<clients {
                let device = try AudioDevices.open(named: self.device, configuration: configuration)
                let target = ServerBenchClientCycle(offset: index * 13)
                try device.start(IOProcedure(target))
                devices.append(device)
                targets.append(target)
            }
        } catch {
            FileHandle.standardError.write(Data("sonora-bench stream-clients: \(self.device): \(error.message)\n".utf8))
            throw ExitCode.failure
        }
        usleep(500_000)  // past the start: page faults, first cycles
        let cycles0 = targets.reduce(0) { $0 + $1.cycles.load(ordering: .relaxed) }
        let cpu0 = sonora_process_cpu_seconds(0)
        usleep(useconds_t(seconds * 1_000_000))
        let cpu1 = sonora_process_cpu_seconds(0)
        let cycles1 = targets.reduce(0) { $0 + $1.cycles.load(ordering: .relaxed) }
        let xruns = devices.reduce(0) { $0 + $1.statistics.xruns }
        let report = StreamClientsReport(
            devices: clients, cpuSeconds: cpu1 - cpu0, deviceCycles: cycles1 - cycles0,
            cpuPerCycle: (cpu1 - cpu0) / (Double(max(cycles1 - cycles0, 1)) / Double(clients)), xruns: xruns)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}

/// What `sonora-bench stream-clients` prints.
struct StreamClientsReport: Codable {
    /// Devices (client streams) the process ran.
    var devices: Int
    /// The process's CPU time over the span.
    var cpuSeconds: Double
    /// Cycles of all its devices together over the span.
    var deviceCycles: Int
    /// CPU seconds per cycle of one device (what the process adds to one appliance cycle).
    var cpuPerCycle: Double
    var xruns: Int
}
