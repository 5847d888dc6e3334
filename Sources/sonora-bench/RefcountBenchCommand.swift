import ArgumentParser
import Foundation

struct RefcountBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refcounts",
        abstract: "Retains and releases per render cycle on the rendering thread (the realtime rule: none).",
        discussion: """
            Counts the Swift runtime's reference-count operations (swift_retain,
            swift_release and their variants) the rendering thread makes per cycle of:
            a 64-gain AudioGraph chain and a 64-input MultiChannelMixerUnit fed by
            render callbacks, each with the steady plan and with full steps; a
            Mixer3DUnit with 16 placed sources; an LV2Unit pulling its input
            through a render callback; and, on a null device's thread, 16
            AudioPlayers through an AudioQueueOutput (counted between the I/O
            unit's pre- and post-render notifications), and that thread between
            two renders (the device engine's cycle and its wait); then the same on a
            duplex sonoraloop ALSA device with an AudioRecorder capturing from it
            (the ALSA driver's cycle, the capture and the recorder's input queue
            between renders), and once more with drift correction forced on (the
            driver's two-clock cycle); the ALSA rows are skipped with a note when
            the loopback plugin is not built beside sonora-bench; and on a
            jack:system client device of a private jackd on the dummy backend
            (scripts/with-jack-dummy.sh; skipped with a note without jackd or
            root): JACK's process callback and its thread between renders; and
            on a sonora: client device of an appliance (sonora run, the binary
            beside sonora-bench; skipped with a note when it is not built). The
            goal is 0 per cycle. With --xrun-every N, each device thread sleeps longer
            than its buffer after every Nth counted render (a real xrun,
            found at the next transfer, and its recovery): a row per device
            then counts the operations per xrun, from that render to the
            next one (goal 0). Stretches with an xrun are counted apart from
            the cycles between renders, forced or not. Judge a release build: a debug build retains around most calls.
            SONORA_REFCOUNT_TRAP=1 stops at the first operation counted (under a
            debugger: who retained).

            Examples:
              swift build -c release --product sonora-bench
              .build/release/sonora-bench refcounts
              .build/release/sonora-bench refcounts --json --cycles 10000
              .build/release/sonora-bench refcounts --xrun-every 25 --device-seconds 3
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Cycles counted per case (after 200 to warm up).")
    var cycles = 2000

    @Option(help: "Seconds the players' device runs while counted.")
    var deviceSeconds = 1.0

    @Option(help: "Force an xrun after every Nth counted render of the device rigs (0: none).")
    var xrunEvery = 0

    @Option(help: "The LV2 plugin the LV2 case renders.")
    var plugin = "http://lv2plug.in/plugins/eg-amp"

    /// The JACK rig alone, as JSON rows and notes: how the command runs itself inside
    /// scripts/with-jack-dummy.sh for the JACK rows.
    @Flag(help: .hidden)
    var jackRig = false

    func validate() throws {
        guard (1...10_000_000).contains(cycles) else { throw ValidationError("--cycles must be in 1…10000000") }
        guard deviceSeconds.isFinite, (0.1...600).contains(deviceSeconds) else { throw ValidationError("--device-seconds must be in 0.1…600") }
        guard xrunEvery == 0 || (2...100_000).contains(xrunEvery) else { throw ValidationError("--xrun-every must be 0 (off) or in 2…100000") }
    }

    func run() throws {
        if jackRig {
            let report = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).runJackRig()
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        let (rows, notes) = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
