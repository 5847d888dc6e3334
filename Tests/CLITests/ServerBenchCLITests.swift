import Foundation
import Testing

/// `sonora-bench server`: help, the row format, a short run, bad options. Timings are never
/// asserted; only that each row is there and well formed (the appliance's too), the CPU
/// figures positive, and the round trips in frames.
@Suite("sonora-bench server", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct ServerBenchCLITests {
    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    /// JACK's dummy server runs here (jackd2 installed; root for its private /dev/shm).
    static var jackAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") && getuid() == 0 }

    @Test("--help explains the contenders with an example")
    func help() throws {
        let help = try bench("server", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench server --clients 16 --seconds 2 --rounds 1 --json"))
    }

    @Test("a short run prints well-formed rows: in-process, JACK and the appliance's CPU, the round trips")
    func shortRun() throws {
        let outcome = try bench("server", "--clients", "16", "--seconds", "1", "--rounds", "1", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([QueueBenchCLITests.Row].self, from: Data(outcome.stdout.utf8))
        for row in rows {
            #expect(row.sonora.isFinite && row.anchor_value.isFinite && ["lower", "higher"].contains(row.better), "\(row.metric)")
            #expect(!row.metric.isEmpty && !row.unit.isEmpty && !row.anchor.isEmpty)
        }
        if Self.jackAvailable {
            let cpu = try #require(rows.first { $0.metric.hasPrefix("16 sources mixed in-process") }, "\(outcome.stderr)")
            #expect(cpu.unit == "µs" && cpu.sonora > 0 && cpu.anchor_value > 0 && cpu.better == "lower")
            #expect(cpu.anchor.contains("JACK2"))
            // The appliance's CPU per client, beside JACK's per client.
            let perClient = try #require(rows.first { $0.metric.hasPrefix("16 client streams on the appliance: CPU per client") }, "\(outcome.stderr)")
            #expect(perClient.unit == "µs" && perClient.sonora > 0 && perClient.anchor_value > 0 && perClient.better == "lower")
            #expect(perClient.anchor.contains("JACK2"))
        }
        // The appliance's CPU goal: always measured (every process counted), goal 1.15.
        let ratio = try #require(rows.first { $0.metric.hasPrefix("16 client streams on the appliance: CPU ÷") }, "\(outcome.stderr)")
        #expect(ratio.unit == "ratio" && ratio.anchor_value == 1.15 && ratio.sonora > 0 && ratio.better == "lower")
        #expect(outcome.stderr.contains("appliance: 16 client programs"), "the appliance's CPU split (sonora run + programs) is in the notes")
        // The floor of one woken process per client, measured in the same run: above 1 (the
        // wake-ups cost something), with its split in the notes.
        let floor = try #require(rows.first { $0.metric.contains("the floor of one process per client") }, "\(outcome.stderr)")
        #expect(floor.unit == "ratio" && floor.anchor_value == 1.15 && floor.sonora > 1 && floor.better == "lower")
        #expect(outcome.stderr.contains("floor: 16 processes each blocked in one eventfd read"), "\(outcome.stderr)")
        // The round trips: measured, or — only after three runs with xruns on a loaded
        // machine — said not to be, with that reason. A clean run on sonoraloop is exactly
        // the buffer, 256 × 2; the appliance adds to it.
        if let roundTrip = rows.first(where: { $0.metric.hasPrefix("round trip in-process") }) {
            #expect(roundTrip.unit == "frames" && roundTrip.sonora == 512 && roundTrip.anchor_value == 512)
            if let latency = rows.first(where: { $0.metric.hasPrefix("round trip through the appliance") }) {
                #expect(latency.unit == "frames" && latency.anchor_value == 256 && latency.better == "lower")
                #expect(latency.sonora > 0, "\(latency.sonora)")
            } else {
                #expect(outcome.stderr.contains("not measured: round trip through the appliance") && outcome.stderr.contains("xruns"), "\(outcome.stderr)")
            }
        } else {
            #expect(outcome.stderr.contains("round trip in-process: left out") && outcome.stderr.contains("xruns"), "\(outcome.stderr)")
        }
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let clients = try bench("server", "--clients", "1")
        #expect(clients.status != 0 && clients.stderr.contains("--clients must be in 2…256"))
        let period = try bench("server", "--period", "300")
        #expect(period.status != 0 && period.stderr.contains("--period must be a power of two"))
    }
}
