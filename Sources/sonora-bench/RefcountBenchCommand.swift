import ArgumentParser
import Foundation

struct RefcountBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refcounts",
        abstract: "Retains, releases and heap calls per render cycle on the rendering thread (the realtime rule: none).",
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
            beside sonora-bench; skipped with a note when it is not built); then
            the appliance's own I/O thread, served in this process as sonora run
            serves it (the null device; its capture into a clients node, mixed
            with a tone, a looping player through an EQ and a splitter and a 3D
            mixer, through the LV2 plugin, a meter, a gain, a parametric EQ, a
            delay, a reverb beside the dry signal merged and channel-mapped, a
            converter, a voice processor and a recorder; session roles):
            its renders (the clients
            node's deliverCapture and mixPlayback, the cycle end waking each
            client) and the thread between them, with 2 playing,
            1 recording and 1 duplex sonora: client attached, and one more joining
            and leaving while counted; and the netjack2 slave's thread (libjacknet's
            process callback and the thread between renders) with the same players
            on a netjack:slave device, run in a child inside a network namespace
            beside jackd's netmanager in another (scripts/netjack-netns.sh, as
            sonora-bench network; root, iproute2 and jackd needed, skipped with
            the reason otherwise), once more with the slave's link taken down and up
            while counted (the renders and the thread between them before and after
            the loss are rows; the stretch across the loss is reported in the notes,
            not held to the rule: no audio is due while the master is gone); and the
            netjack2 master's thread with the same
            players on a netjack:master device, in a child inside the master's
            namespace, driving JACK's jack_net_slave in the slave's; and an OpenAL
            context on a playback null device (its mix in the I/O unit's input
            callback: placed, moving, filtered and reverb-sending sources, a stereo
            one and a streaming one, the scene changed every 10 ms). The
            goal is 0 per cycle. With --xrun-every N, each device thread sleeps longer
            than its buffer after every Nth counted render (a real xrun,
            found at the next transfer, and its recovery): a row per device
            then counts the operations per xrun, from that render to the
            next one (goal 0). Stretches with an xrun are counted apart from
            the cycles between renders, forced or not. The heap calls (malloc,
            free and kin) of every counted stretch are counted too: one row sums
            them over every case and rig (goal 0), the notes give each one's.
            Judge a release build: a debug build retains around most calls.
            SONORA_REFCOUNT_TRAP=1 stops at the first operation counted (under a
            debugger: who retained); SONORA_REFCOUNT_TRAP=2 at the first heap call.

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

    /// The netjack2 rig alone, as JSON rows and notes, on a netjack2 master at this address:
    /// how the command runs itself inside the slave's network namespace for the netjack2 rows.
    @Option(help: .hidden)
    var netjackRig: String?

    /// With --netjack-rig: the run whose link is taken down and up while counted.
    @Flag(help: .hidden)
    var netjackLinkLoss = false

    /// The netjack2 master rig alone, as JSON rows and notes: how the command runs itself
    /// inside the master's network namespace (jack_net_slave in the slave's).
    @Flag(help: .hidden)
    var netjackMasterRig = false

    func validate() throws {
        guard (1...10_000_000).contains(cycles) else { throw ValidationError("--cycles must be in 1…10000000") }
        guard deviceSeconds.isFinite, (0.1...600).contains(deviceSeconds) else { throw ValidationError("--device-seconds must be in 0.1…600") }
        guard xrunEvery == 0 || (2...100_000).contains(xrunEvery) else { throw ValidationError("--xrun-every must be 0 (off) or in 2…100000") }
    }

    func run() throws {
        if let netjackRig {
            let report = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).runNetjackRig(master: netjackRig, linkLoss: netjackLinkLoss)
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        if netjackMasterRig {
            let report = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).runNetjackMasterRig()
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        if jackRig {
            let report = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).runJackRig()
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        let (rows, notes) = try RefcountAudit(cycles: cycles, lv2Plugin: plugin, deviceSeconds: deviceSeconds, xrunEvery: xrunEvery).run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
