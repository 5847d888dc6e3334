import Foundation
import SonoraTestSupport
import Testing

/// `sonora-bench refcounts`: help, the rows' shape, bad options. The counts themselves are judged
/// on a release build (BENCHMARKS.md); this debug binary retains around most calls, which is
/// what shows the counter counting the render paths' operations at all.
@Suite("sonora-bench refcounts", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct RefcountBenchCLITests {
    typealias Row = BenchmarkJSONRow

    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    /// The bench counts players on an appliance's client device when `sonora` is built beside it.
    static var applianceBuilt: Bool {
        FileManager.default.isExecutableFile(atPath: URL(fileURLWithPath: sonoraBenchBinary!).deletingLastPathComponent().appendingPathComponent("sonora").path)
    }

    @Test("--help says what is counted, with an example")
    func help() throws {
        let help = try bench("refcounts", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench refcounts --json"))
    }

    @Test("--json: a row per render path, goal 0 operations, and the counter sees the debug build's retains")
    func rows() throws {
        let outcome = try bench("refcounts", "--json", "--cycles", "50", "--device-seconds", "0.3")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([Row].self, from: Data(outcome.stdout.utf8))
        // The ALSA rows need the loopback plugin, which `make build` puts beside sonora-bench;
        // the JACK rows jackd and root (the bench runs itself beside a private jackd).
        // The appliance's own I/O thread is served in the bench's process (2 rows), so is an OpenAL
        // context on a playback null device (2 rows), and the heap
        // calls of every counted thread are one row; the netjack2 slave's 4 rows (2 of them through
        // a link loss) and the master's 2 need network namespaces, root and jackd (skipped with a
        // note otherwise).
        let jack = JACKTestServer.isAvailable
        let netjack = Self.netjackRows(rows) + Self.netjackMasterRows(rows, xrunsForced: false)
        #expect(rows.count == 17 + (jack ? 2 : 0) + (Self.applianceBuilt ? 2 : 0) + netjack, "\(rows.map(\.metric))")
        let jackNames = jack ? ["AudioPlayers on a jack:system client", "JACK's process thread between two renders"] : []
        let applianceNames = Self.applianceBuilt ? ["AudioPlayers on a sonora: client device", "appliance client device's thread between two renders"] : []
        let servedNames = ["an OpenAL context on a playback device", "the OpenAL device's thread between two renders", "the appliance serving client streams on the null device", "the appliance's I/O thread between two renders", "heap calls on the counted rendering threads"]
        for name in servedNames + ["64-gain chain (steady plan)", "64-gain chain (full steps)", "64-input mixer with render callbacks (steady plan)", "3D mixer", "LV2Unit", "AudioPlayers looping on the null device", "null device's thread between two renders", "AudioPlayers on a duplex sonoraloop ALSA device recording too", "ALSA device's thread between two renders", "drift-corrected ALSA device's thread between two renders"] + jackNames + applianceNames {
            #expect(rows.contains { $0.metric.contains(name) }, "\(name)")
        }
        for row in rows {
            #expect(row.unit == "ops" && row.better == "lower" && row.anchor_value == 0, "\(row.metric)")
            #expect(row.sonora.isFinite && row.sonora >= 0, "\(row.metric)")
        }
        // Unoptimized, the full steps retain the units they call: a counter bound to nothing would say 0.
        #expect(rows.contains { $0.metric.contains("full steps") && $0.sonora > 0 })
    }

    @Test("--xrun-every: each device's stall makes xruns, and a row counts the operations per xrun")
    func forcedXruns() throws {
        let outcome = try bench("refcounts", "--json", "--cycles", "20", "--device-seconds", "0.5", "--xrun-every", "8")
        // Non-zero when a rig's stalls made no xrun: a row that counted nothing would read as 0.
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([Row].self, from: Data(outcome.stdout.utf8))
        // JACK's per-xrun row comes only when jackd reported an xrun for a stall (it usually does).
        // The appliance's rows have none: it never waits for a client, so a stall is no xrun of its device.
        let jack = JACKTestServer.isAvailable ? 2 : 0
        // The appliance's own I/O thread runs on the null device: its stalls are xruns (3 rows).
        let base = 22 + jack + (Self.applianceBuilt ? 2 : 0) + Self.netjackRows(rows) + Self.netjackMasterRows(rows, xrunsForced: true)
        #expect([base, base + (jack > 0 ? 1 : 0)].contains(rows.count), "\(rows.map(\.metric))")
        for name in ["the OpenAL device's null device's thread through an xrun's recovery", "the appliance's null device's thread through an xrun's recovery", "the null device's thread through an xrun's recovery", "the ALSA device's thread through an xrun's recovery", "the drift-corrected ALSA device's thread through an xrun's recovery"] {
            let row = rows.first { $0.metric.contains(name) }
            #expect(row?.metric.hasSuffix("per xrun") == true && row?.anchor_value == 0, "\(name)")
            #expect(row.map { $0.sonora.isFinite && $0.sonora >= 0 } == true, "\(name)")
        }
    }

    /// The netjack2 slave's rows, all or none (none only where network namespaces cannot be made).
    /// With them, the same slave through a link taken down and up (2 rows more): the render and
    /// the thread between renders before and after the loss, the loss itself in the notes.
    static func netjackRows(_ rows: [Row]) -> Int {
        let names = ["AudioPlayers on a netjack:slave device of jackd's netmanager", "the netjack2 slave's thread between two renders of those players",
                     "AudioPlayers on a netjack:slave device whose network link is taken down and up", "the netjack2 slave's thread between two renders, before and after a link loss"]
        let found = names.filter { name in rows.contains { $0.metric.contains(name) } }.count
        #expect(found == 0 || found == 4, "\(rows.map(\.metric))")
        return found
    }

    /// The netjack2 master's rows: none (no namespaces here), or the render and the thread between
    /// renders, and with forced xruns the recovery too (a master late by its buffer counts an xrun).
    static func netjackMasterRows(_ rows: [Row], xrunsForced: Bool) -> Int {
        var names = ["AudioPlayers on a netjack:master device", "the netjack2 master's thread between two renders"]
        if xrunsForced { names.append("the netjack2 master device's thread through an xrun's recovery") }
        let found = names.filter { name in rows.contains { $0.metric.contains(name) } }.count
        #expect(found == 0 || found == names.count, "\(rows.map(\.metric))")
        return found
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        for cycles in ["0", "-5", "abc"] {
            let outcome = try bench("refcounts", "--cycles", cycles)
            #expect(outcome.status != 0 && outcome.stderr.contains("cycles"), "--cycles \(cycles): \(outcome.stderr)")
        }
        for seconds in ["0", "nan", "1e9"] {
            let outcome = try bench("refcounts", "--device-seconds", seconds)
            #expect(outcome.status != 0 && outcome.stderr.contains("device-seconds"), "--device-seconds \(seconds): \(outcome.stderr)")
        }
        for every in ["1", "-3", "abc"] {
            let outcome = try bench("refcounts", "--xrun-every", every)
            #expect(outcome.status != 0 && outcome.stderr.contains("xrun-every"), "--xrun-every \(every): \(outcome.stderr)")
        }
    }
}
