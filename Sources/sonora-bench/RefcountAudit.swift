import CRefcountCounter
import Foundation
import SonoraCore
import SonoraHAL
import SonoraLV2
@_spi(Benchmark) import SonoraToolbox
@_spi(Benchmark) import SonoraUnits

/// `sonora-bench refcounts`: the Swift reference-count operations (retains and releases) each
/// render path makes per cycle, counted on the rendering thread in this build (CRefcountCounter).
/// The realtime rule allows none: each is an atomic read-modify-write on a shared line, and a
/// release can free. Only an optimized build says which remain — a debug build retains around
/// almost every call — so the goal is judged on the release binary; the tests run it for shape.
struct RefcountAudit {
    var cycles: Int
    var lv2Plugin: String
    /// Seconds the players' device runs while counted.
    var deviceSeconds: Double = 1
    /// When > 0, the device rigs stall their thread after every `xrunEvery`-th counted render
    /// for longer than the device's buffer, so each stall is an xrun and its recovery.
    var xrunEvery = 0

    struct CounterUnavailable: Error, CustomStringConvertible {
        var description: String { "the reference-count counter is not active in this binary (its swift_retain or malloc is not the one the program calls)" }
    }

    struct Count {
        var retains: Int
        var releases: Int
        /// malloc, calloc, realloc, free and the aligned forms (`sonora_refcount_counter_heap_calls`).
        var heapCalls = 0
    }

    /// Heap calls seen on the counted threads, summed over cases and rigs, and the cycles they
    /// were counted over: one row of their own (the realtime rule: none).
    struct HeapTotal: Codable {
        var calls = 0
        var cycles = 0

        mutating func add(_ count: Count, cycles more: Int) {
            calls += count.heapCalls
            cycles += more
        }
    }

    /// The operations `cycle` makes on this thread over `cycles` calls, after 200 to warm up
    /// (first calls may build metadata or caches once).
    func count(_ name: String, _ cycle: (Int) -> AudioError.Code) throws -> Count {
        for index in 0..<200 {
            let status = cycle(index)
            guard status == .noError else { throw AudioError(status, "\(name): render failed at cycle \(index)") }
        }
        var retains = 0
        var releases = 0
        var failed = AudioError.Code.noError
        sonora_refcount_counter_begin(1)
        for index in 200..<(200 + cycles) where failed == .noError { failed = cycle(index) }
        sonora_refcount_counter_end(&retains, &releases)
        let heapCalls = sonora_refcount_counter_heap_calls()
        // A failing render may take a shorter path: its count would say nothing.
        guard failed == .noError else { throw AudioError(failed, "\(name): render failed while counted") }
        return Count(retains: retains, releases: releases, heapCalls: heapCalls)
    }

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        guard sonora_refcount_counter_available() != 0, Self.countsKnownOperations() else {
            throw CounterUnavailable()
        }
        var cases: [(name: String, cycle: (Int) -> AudioError.Code)] = []
        for fullSteps in [false, true] {
            let graphs = GraphBenchmark(cycles: cycles, trials: 1, fullSteps: fullSteps)
            let steps = fullSteps ? "full steps" : "steady plan"
            cases.append(("graph, 64-gain chain (\(steps))", try Self.chainCycle(graphs)))
            cases.append(("graph, 64-input mixer with render callbacks (\(steps))", try graphs.mixerGraphCycle()))
        }
        cases.append(("graph, 3D mixer with 16 placed sources (steady plan)", try Self.mixer3DCycle(frames: 128)))
        var notes: [String] = []
        do {
            cases.append(("LV2Unit \(lv2Plugin), pulled through a render callback", try Self.lv2Cycle(uri: lv2Plugin)))
        } catch {
            notes.append("LV2Unit \(lv2Plugin): skipped (\(error))")
        }
        var rows: [BenchmarkRow] = []
        var heap = HeapTotal()
        var rigs: [DeviceRig] = [.null]
        if ALSAConfiguration.loopPluginPath != nil {
            rigs += [.loopWithRecorder, .loopDriftCorrected]
        } else {
            notes.append("the ALSA rows: skipped, the sonoraloop plugin is not built beside sonora-bench (swift build -c release --product asound_module_pcm_sonoraloop)")
        }
        for rig in rigs {
            let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: rig, xrunEvery: xrunEvery)
            append(counted, rig: rig, to: &rows, notes: &notes, heap: &heap)
        }
        absorb(jackRig(), skipped: "the JACK rows", rows: &rows, notes: &notes, heap: &heap)
        if ServerBenchAppliance.sonoraBinary != nil {
            let appliance = try ServerBenchAppliance(name: "refcounts", config: """
                engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
                device: {playback: "null"}
                nodes:
                  - {id: clients, kind: clients}
                connections:
                  - {from: clients, to: output}

                """)
            defer { appliance.stop() }
            let rig = DeviceRig.appliance(socket: appliance.sessionSocket)
            let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: rig, xrunEvery: xrunEvery)
            append(counted, rig: rig, to: &rows, notes: &notes, heap: &heap)
        } else {
            notes.append("the appliance rows: skipped, the sonora binary is not built beside sonora-bench")
        }
        append(try Self.countOpenAL(seconds: deviceSeconds, xrunEvery: xrunEvery), rig: .openAL, to: &rows, notes: &notes, heap: &heap)
        let served = try Self.countApplianceServer(seconds: deviceSeconds, xrunEvery: xrunEvery, lv2Plugin: lv2Plugin)
        append(served.counts, rig: .applianceServer, to: &rows, notes: &notes, heap: &heap)
        notes += served.notes
        absorb(netjackRig(), skipped: "the netjack2 slave rows", rows: &rows, notes: &notes, heap: &heap)
        absorb(netjackRig(linkLoss: true), skipped: "the netjack2 slave rows through a link loss", rows: &rows, notes: &notes, heap: &heap)
        absorb(netjackMasterRig(), skipped: "the netjack2 master rows", rows: &rows, notes: &notes, heap: &heap)
        for (name, cycle) in cases {
            let counted = try count(name, cycle)
            let perCycle = Double(counted.retains + counted.releases) / Double(cycles)
            rows.append(
                BenchmarkRow(
                    metric: "\(name): retains and releases per render cycle", unit: "ops", sonora: perCycle,
                    anchor: "none (the realtime rule)", anchorValue: 0, better: .lower))
            notes.append("\(name): \(counted.retains) retains, \(counted.releases) releases, \(counted.heapCalls) heap calls in \(cycles) cycles")
            heap.add(counted, cycles: cycles)
        }
        if sonora_refcount_counter_heap_available() != 0 {
            rows.append(
                BenchmarkRow(
                    metric: "heap calls on the counted rendering threads, every case and rig above (malloc, free and kin; per cycle)", unit: "ops",
                    sonora: Double(heap.calls) / Double(max(heap.cycles, 1)), anchor: "none (the realtime rule)", anchorValue: 0, better: .lower))
            notes.append("heap calls: \(heap.calls) in \(heap.cycles) counted stretches (each case's and rig's notes give its own)")
        } else {
            notes.append("heap calls: not counted in this build (a sanitizer's runtime owns malloc)")
        }
        notes.insert("counted on the rendering thread over \(cycles) cycles after 200 to warm up; a debug build retains around most calls, so judge a release build", at: 0)
        return (rows, notes)
    }

    /// The rows and notes of one device rig's counts.
    func append(_ counted: DeviceCounts, rig: DeviceRig, to rows: inout [BenchmarkRow], notes: inout [String], heap: inout HeapTotal) {
        heap.add(counted.render.count, cycles: counted.render.spans)
        heap.add(counted.between.count, cycles: counted.between.spans)
        heap.add(counted.recovery.count, cycles: counted.recovery.spans)
        let (name, between) = rig.rowNames
        rows.append(
            BenchmarkRow(
                metric: "\(name): retains and releases per render cycle", unit: "ops",
                sonora: Double(counted.render.count.retains + counted.render.count.releases) / Double(max(counted.render.spans, 1)),
                anchor: "none (the realtime rule)", anchorValue: 0, better: .lower))
        notes.append("\(name): \(counted.render.count.retains) retains, \(counted.render.count.releases) releases, \(counted.render.count.heapCalls) heap calls in \(counted.render.spans) cycles")
        rows.append(
            BenchmarkRow(
                metric: "\(between): retains and releases per cycle", unit: "ops",
                sonora: Double(counted.between.count.retains + counted.between.count.releases) / Double(max(counted.between.spans, 1)),
                anchor: "none (the realtime rule)", anchorValue: 0, better: .lower))
        notes.append("\(between): \(counted.between.count.retains) retains, \(counted.between.count.releases) releases, \(counted.between.count.heapCalls) heap calls in \(counted.between.spans) cycles without an xrun")
        let recovery = "\(rig.deviceName)'s thread through an xrun's recovery (from the post-render before it to the next pre-render: the failed transfer, the recovery, the event posted, the next wait)"
        if xrunEvery > 0, counted.recoveryXruns > 0 {
            rows.append(
                BenchmarkRow(
                    metric: "\(recovery): retains and releases per xrun", unit: "ops",
                    sonora: Double(counted.recovery.count.retains + counted.recovery.count.releases) / Double(counted.recoveryXruns),
                    anchor: "none (the realtime rule)", anchorValue: 0, better: .lower))
        }
        notes.append(
            "\(recovery): \(counted.recovery.count.retains) retains, \(counted.recovery.count.releases) releases, \(counted.recovery.count.heapCalls) heap calls over \(counted.recoveryXruns) xruns in \(counted.recovery.spans) cycles"
                + (xrunEvery > 0 ? " (\(counted.stalls) stalls of \(counted.stallMicroseconds) µs forced, one after every \(xrunEvery) renders)" : " (xruns not forced: --xrun-every N)"))
    }

    /// What the JACK rig counted, as rows and notes (the child's report).
    struct JackRigReport: Codable {
        var rows: [BenchmarkRow]
        var notes: [String]
        var heap: HeapTotal?
    }

    /// A child rig's rows, notes and heap counts taken into this run's, or why it was skipped.
    func absorb(
        _ result: Result<JackRigReport, AudioError>, skipped what: String,
        rows: inout [BenchmarkRow], notes: inout [String], heap: inout HeapTotal
    ) {
        switch result {
        case .success(let report):
            rows += report.rows
            notes += report.notes
            heap.calls += report.heap?.calls ?? 0
            heap.cycles += report.heap?.cycles ?? 0
        case .failure(let reason):
            notes.append("\(what): skipped, \(reason.message)")
        }
    }

    /// The JACK rig, counted in this process (inside scripts/with-jack-dummy.sh: `--jack-rig`).
    func runJackRig() throws -> JackRigReport {
        guard sonora_refcount_counter_available() != 0, Self.countsKnownOperations() else { throw CounterUnavailable() }
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: .jack, xrunEvery: xrunEvery)
        var heap = HeapTotal()
        append(counted, rig: .jack, to: &rows, notes: &notes, heap: &heap)
        if xrunEvery > 0, counted.recoveryXruns == 0 {
            notes.append("the JACK client device: \(counted.stalls) stalls of \(counted.stallMicroseconds) µs made no xrun that JACK reported (jackd's dummy backend without realtime waits for a late client)")
        }
        return JackRigReport(rows: rows, notes: notes, heap: heap)
    }

    /// The JACK rig in a child of this program beside a private jackd on the dummy backend
    /// (scripts/with-jack-dummy.sh; jackd and root needed, as for the JACK tests).
    func jackRig() -> Result<JackRigReport, AudioError> {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") else { return .failure(AudioError(.unspecified, "jackd is not installed (Debian: jackd2)")) }
        guard getuid() == 0 else { return .failure(AudioError(.unspecified, "a private jackd needs root (its own /dev/shm)")) }
        return IOBenchmark.runBesideJack(
            rate: 48000, period: 256, ["refcounts", "--jack-rig", "--device-seconds", "\(deviceSeconds)", "--xrun-every", "\(xrunEvery)"]
        ).flatMap { data in
            guard let report = try? JSONDecoder().decode(JackRigReport.self, from: data) else {
                return .failure(AudioError(.unspecified, "the JACK rig's report is not JSON"))
            }
            return .success(report)
        }
    }

    /// The counter's self-check: 100 retains and 100 releases made on purpose must be seen (and
    /// a malloc and a free where heap calls are counted).
    static func countsKnownOperations() -> Bool {
        final class Object {}
        let object = Object()
        let unmanaged = Unmanaged.passUnretained(object)
        var retains = 0
        var releases = 0
        sonora_refcount_counter_begin(0)
        for _ in 0..<100 { _ = unmanaged.retain() }
        for _ in 0..<100 { unmanaged.release() }
        sonora_refcount_counter_end(&retains, &releases)
        guard withExtendedLifetime(object, { retains >= 100 && releases >= 100 }) else { return false }
        // And a malloc and a free, where heap calls are counted.
        guard sonora_refcount_counter_heap_available() != 0 else { return true }
        sonora_refcount_counter_begin(0)
        sonora_refcount_counter_heap_touch()
        sonora_refcount_counter_end(&retains, &releases)
        return sonora_refcount_counter_heap_calls() >= 2
    }

    static func chainCycle(_ graphs: GraphBenchmark) throws -> (Int) -> AudioError.Code {
        let graph = try graphs.gainChain(units: 64).graph
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: graphs.frames)
        let list = buffers.list
        let frames = graphs.frames
        return { cycle in
            var flags = RenderActionFlags()
            return withExtendedLifetime(buffers) {
                graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
            }
        }
    }

    /// A `Mixer3DUnit` of 16 inputs fed by render callbacks, each placed elsewhere (azimuth,
    /// distance, gain), into a generic output.
    static func mixer3DCycle(frames: Int) throws -> (Int) -> AudioError.Code {
        let graph = AudioGraph()
        let mixer = Mixer3DUnit(inputs: 16)
        try mixer.setMaximumFramesPerSlice(frames)
        let mixerNode = graph.addNode(mixer)
        for input in 0..<16 {
            try mixer.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: input, to: Float(input * 22 - 170))
            try mixer.setParameter(Mixer3DUnit.Parameter.distance, scope: .input, element: input, to: Float(1 + input))
            try mixer.setParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: input, to: -3)
            try graph.setRenderCallback(GraphBenchmark.Constant(), node: mixerNode, input: input)
        }
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(frames)
        let head = graph.addNode(output)
        try graph.connect(mixerNode, bus: 0, to: head, input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let list = buffers.list
        return { cycle in
            var flags = RenderActionFlags()
            return withExtendedLifetime(buffers) {
                graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
            }
        }
    }

    /// One stretch of the device thread counted again and again (written by that thread only,
    /// read after the device stops): what it saw in all, over how many stretches.
    struct DeviceSpan {
        var counting = false
        var count = Count(retains: 0, releases: 0)
        var spans = 0

        mutating func begin() {
            sonora_refcount_counter_begin(1)
            counting = true
        }

        /// Ends the stretch begun on this thread, if one was, and adds it to this span's count.
        mutating func end() {
            if let counted = stop() { add(counted) }
        }

        /// Ends the stretch begun on this thread, if one was: what it saw, not yet added.
        mutating func stop() -> Count? {
            guard counting else { return nil }
            var retains = 0
            var releases = 0
            sonora_refcount_counter_end(&retains, &releases)
            counting = false
            return Count(retains: retains, releases: releases, heapCalls: sonora_refcount_counter_heap_calls())
        }

        mutating func add(_ counted: Count) {
            count.retains += counted.retains
            count.releases += counted.releases
            count.heapCalls += counted.heapCalls
            spans += 1
        }
    }

    /// The device thread inside the I/O unit's renders (pre- to post-render notification) and
    /// between them (one cycle's post-render to the next one's pre-render: the engine's cycle).
    /// A stretch between two renders in which the device counted an xrun goes to `recovery`
    /// (with the xruns it saw), not to `between`.
    struct DeviceTally {
        var armed = false
        var render = DeviceSpan()
        var between = DeviceSpan()
        var recovery = DeviceSpan()
        var recoveryXruns = 0
        /// The device's xrun count (read on the device thread outside the counted stretches).
        var xruns: () -> Int = { 0 }
        var xrunsAtBetweenStart = 0
        /// Counted renders so far; after every `stallEvery`-th (0: never) the thread sleeps
        /// `stall` (longer than the device's buffer: an xrun), outside the counted stretches.
        var renders = 0
        var stallEvery = 0
        var stall = timespec(tv_sec: 0, tv_nsec: 0)
        var stalls = 0

        /// A stall after every `every`-th render (0: none) longer than `format`'s buffer, so
        /// each is an xrun; `xruns` reads the device's count.
        mutating func armStalls(every: Int, format: DeviceFormat, xruns: @escaping () -> Int) {
            self.xruns = xruns
            let nanoseconds = (format.periods + 1) * format.periodFrames * 1_000_000_000 / format.sampleRate
            stallEvery = every
            stall = timespec(tv_sec: nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
        }

        var stallMicroseconds: Int { stall.tv_sec * 1_000_000 + stall.tv_nsec / 1000 }
    }

    /// What a device rig counted.
    struct DeviceCounts {
        var render: DeviceSpan
        var between: DeviceSpan
        var recovery: DeviceSpan
        var recoveryXruns: Int
        var stalls: Int
        var stallMicroseconds: Int
        /// What the interlude (if any) reported.
        var note: String? = nil
    }

    /// Where the counted players play.
    enum DeviceRig: Equatable {
        /// The null device: a timer loop stands in for a driver.
        case null
        /// A duplex sonoraloop ALSA device (S16_LE, mmap where the plugin grants it, SCHED_FIFO),
        /// with an AudioRecorder capturing from the same I/O unit: the ALSA driver's own cycle
        /// (its wait, pointer and conversion work), the I/O unit's input callback and the
        /// recorder's input queue capture are then on the counted thread too.
        case loopWithRecorder
        /// The same with drift correction forced on (one clock here): the driver's two-clock
        /// cycle (`driftCycle`: capture queued in the drift compensator and read out resampled),
        /// which a device of two sound cards runs.
        case loopDriftCorrected
        /// A `jack:system` client device of a jackd on the dummy backend (the bench runs itself
        /// inside scripts/with-jack-dummy.sh for it): JACK's process thread, the client
        /// driver's cycle (`JACKProcessor`: ports, xruns reported by JACK's callback) around
        /// the I/O unit's render.
        case jack
        /// A `sonora:` client device of an appliance (`sonora run`, the binary beside this one,
        /// on the null device with a `clients` node): the client driver's thread, woken by the
        /// appliance each cycle, renders into the shared-memory ring.
        case appliance(socket: String)
        /// The appliance's own I/O thread (`sonora run`'s side, served in this process through
        /// `PipelineRuntime.serve` on the null device): the graph's `clients` node mixing the
        /// client streams and delivering capture, the cycle end waking each client.
        case applianceServer
        /// A `netjack:slave@MASTER` device of jackd's netmanager across network namespaces
        /// (the bench runs itself inside the slave's namespace for it): libjacknet's process
        /// thread calling `NetJackSlaveCycle.process` around the I/O unit's render.
        case netjackSlave(master: String)
        /// The same slave, its network link taken down mid-run (the master goes silent, the
        /// device reports an interruption) and up again (libjacknet re-joins, the device
        /// reports the end): the render and the thread after the loss, and the stretch
        /// across it, counted apart.
        case netjackSlaveLinkLoss(master: String)
        /// A `netjack:master` device driving JACK's own `jack_net_slave` across network
        /// namespaces (the bench runs itself inside the master's namespace for it): the
        /// master's timer-paced thread sending to and receiving from the slave around the
        /// I/O unit's render.
        case netjackMaster
        /// The OpenAL-style API on a playback device (`ALDevice.playback("null")`): its
        /// contexts mixed in the I/O unit's input callback on the null device's thread.
        case openAL

        var deviceName: String {
            switch self {
            case .null: "the null device"
            case .loopWithRecorder: "the ALSA device"
            case .loopDriftCorrected: "the drift-corrected ALSA device"
            case .jack: "the JACK client device"
            case .appliance: "the appliance client device"
            case .applianceServer: "the appliance's null device"
            case .netjackSlave: "the netjack2 slave device"
            case .netjackSlaveLinkLoss: "the netjack2 slave device through a link loss"
            case .netjackMaster: "the netjack2 master device"
            case .openAL: "the OpenAL device's null device"
            }
        }

        /// Whether a stall of this rig's thread is an xrun its device counts: a JACK client's is
        /// jackd's to report, and an appliance never waits for a client (its ring runs dry).
        var countsItsOwnXruns: Bool {
            switch self {
            // (A master late by more than its buffer re-anchors its clock and counts an xrun.)
            case .null, .loopWithRecorder, .loopDriftCorrected, .applianceServer, .netjackMaster, .openAL: true
            case .jack, .appliance, .netjackSlave, .netjackSlaveLinkLoss: false
            }
        }

        /// The rows' names: the render, and the thread between two renders.
        var rowNames: (render: String, between: String) {
            switch self {
            case .null: (
                "AudioQueueOutput, 16 AudioPlayers looping on the null device (the I/O unit's render on the device thread)",
                "the null device's thread between two renders of those players (the engine's cycle and its wait)")
            case .loopWithRecorder: (
                "AudioQueueOutput, 16 AudioPlayers on a duplex sonoraloop ALSA device recording too (the I/O unit's render)",
                "the ALSA device's thread between two renders of those players (the driver's cycle, the capture, the input callback into the recorder's queue)")
            case .loopDriftCorrected: (
                "AudioQueueOutput, 16 AudioPlayers on the same duplex ALSA device with drift correction on (the I/O unit's render)",
                "the drift-corrected ALSA device's thread between two renders of those players (the driver's two-clock cycle: capture queued and resampled, the input callback into the recorder's queue)")
            case .jack: (
                "AudioQueueOutput, 16 AudioPlayers on a jack:system client of jackd's dummy backend (the I/O unit's render in JACK's process callback)",
                "JACK's process thread between two renders of those players (libjack's wait and the client driver's cycle: ports, xrun accounting)")
            case .appliance: (
                "AudioQueueOutput, 16 AudioPlayers on a sonora: client device of an appliance (the I/O unit's render on the client driver's thread)",
                "the appliance client device's thread between two renders of those players (its wait for the appliance's wake-up, the shared-memory ring's write)")
            case .applianceServer: (
                "the appliance serving client streams on the null device (voice-processing I/O), 2 playback + 1 capture + 1 duplex clients and 1 more joining and leaving (the I/O unit's render: the input node, the clients node's deliverCapture and mixPlayback, a mixer with a tone, a player through an EQ and a splitter, a 3D mixer, the --plugin LV2 plugin, a meter, a gain, a parametric EQ, a delay, a reverb, a merger, a channel map, a converter, a voice processor, a recorder, the cycle end waking each client)",
                "the appliance's I/O thread between two renders (the null device's engine cycle and its wait)")
            case .netjackSlave: (
                "AudioQueueOutput, 16 AudioPlayers on a netjack:slave device of jackd's netmanager across network namespaces (the I/O unit's render in libjacknet's process callback)",
                "the netjack2 slave's thread between two renders of those players (libjacknet's receive and send, NetJackSlaveCycle.process: clock, lent buffers, load)")
            case .netjackSlaveLinkLoss: (
                "AudioQueueOutput, 16 AudioPlayers on a netjack:slave device whose network link is taken down and up mid-run (the I/O unit's render in libjacknet's process callback, before and after the loss)",
                "the netjack2 slave's thread between two renders, before and after a link loss (the stretch across the loss counted apart)")
            case .openAL: (
                "an OpenAL context on a playback device (the null device): 24 looping mono sources placed, moving and doppler-shifted, 2 through a lowpass filter, 8 sending to a reverb slot, 1 stereo source, 1 streaming queued buffers, positions and the listener changed every 10 ms (the I/O unit's render: the device's mix)",
                "the OpenAL device's thread between two renders (the null device's engine cycle and its wait)")
            case .netjackMaster: (
                "AudioQueueOutput, 16 AudioPlayers on a netjack:master device driving JACK's jack_net_slave across network namespaces (the I/O unit's render on the master's thread)",
                "the netjack2 master's thread between two renders of those players (its timer wait, libjacknet's send and receive, the copy into the send buffers, xrun and load bookkeeping)")
            }
        }
    }

    /// A device rig's render notification on its I/O unit (context: its `DeviceTally`): counts
    /// the renders (pre- to post-render) and the stretches between them, splits off those with
    /// an xrun, and stalls the thread when asked (see `countPlayersOnDevice`).
    static let tallyNotify: RenderCallback.Function = { context, request in
        let tally = context!.assumingMemoryBound(to: DeviceTally.self)
        let flags = request.assumingMemoryBound(to: RenderRequest.self).pointee.flags
        if flags.contains(.preRender) {
            if let counted = tally.pointee.between.stop() {
                let xruns = tally.pointee.xruns() - tally.pointee.xrunsAtBetweenStart
                if xruns > 0 {
                    tally.pointee.recovery.add(counted)
                    tally.pointee.recoveryXruns += xruns
                } else {
                    tally.pointee.between.add(counted)
                }
            }
            if tally.pointee.armed { tally.pointee.render.begin() }
        } else if flags.contains(.postRender), tally.pointee.render.counting {
            tally.pointee.render.end()
            if tally.pointee.armed {
                tally.pointee.renders += 1
                if tally.pointee.stallEvery > 0, tally.pointee.renders % tally.pointee.stallEvery == 0 {
                    // Late on purpose: past the buffer, so the next transfer finds an xrun.
                    var request = tally.pointee.stall
                    var remaining = timespec()
                    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
                    tally.pointee.stalls += 1
                }
                tally.pointee.xrunsAtBetweenStart = tally.pointee.xruns()
                tally.pointee.between.begin()
            }
        }
        return 0
    }

    /// `players` AudioPlayers looping a 1 s WAV on `rig` (256-frame periods), counted on the
    /// device's thread for `seconds` after 0.3 s of warm-up, between the I/O unit's
    /// pre-render and post-render notifications (the queue mixer and the conversion to the device),
    /// and apart from that between one cycle's post-render and the next one's pre-render (the
    /// device engine's cycle: its clock, load and xrun bookkeeping, the wait; on the duplex rig
    /// also the capture and the input callback, which come before the output's render). A
    /// stretch between two renders in which the device counted an xrun is an xrun's recovery,
    /// counted apart. With `xrunEvery` > 0 the thread sleeps for the device's buffer and a
    /// period after every `xrunEvery`-th counted render (in the post-render notification,
    /// outside the counted stretches): a real xrun, found by the driver at its next transfer,
    /// and its recovery, once per stall. A sleep, not a spin: the SCHED_FIFO thread leaves
    /// the CPU to the rest of the machine while it is late.
    static func countPlayersOnDevice(
        players: Int, seconds: Double, rig: DeviceRig = .null, xrunEvery: Int = 0,
        interlude: ((any AudioDevice) throws -> String)? = nil
    ) throws -> DeviceCounts {
        let folder = NSTemporaryDirectory() + "sonora-bench-refcounts-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let song = folder + "/loop.wav"
        try SoundsBenchmark.writeWAV(song, samples: QueueBenchmark.sourceSamples(seconds: 1), channels: 2)
        let device: any AudioDevice
        let output: AudioQueueOutput
        var recorder: AudioRecorder?
        switch rig {
        case .null:
            device = try AudioDevices.open(named: "null", configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: 256, inputChannels: 0, outputChannels: 2))
            output = try AudioQueueOutput(device: device, maximumQueues: players)
        case .jack:
            device = try AudioDevices.open(named: "jack:system", configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2))
            output = try AudioQueueOutput(device: device, maximumQueues: players)
        case .appliance(let socket):
            device = try AudioDevices.open(named: "sonora:\(socket)", configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2))
            output = try AudioQueueOutput(device: device, maximumQueues: players)
        case .netjackSlave(let master), .netjackSlaveLinkLoss(let master):
            // 2 + 2 channels, as `sonora-bench network`: the master loops what the slave returns
            // back to it, and whole periods render straight in libjacknet's buffers.
            device = try AudioDevices.open(named: "netjack:slave@\(master),latency=2,name=refcounts", configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: 256, inputChannels: 2, outputChannels: 2))
            output = try AudioQueueOutput(device: device, maximumQueues: players)
        case .netjackMaster:
            // 2 + 2 channels, as jack_net_slave is started (-C 2 -P 2); opening waits for it to announce itself.
            device = try AudioDevices.open(named: "netjack:master,name=refcounts", configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: 256, inputChannels: 2, outputChannels: 2))
            output = try AudioQueueOutput(device: device, maximumQueues: players)
        case .applianceServer:
            throw AudioError(.unspecified, "the appliance's own I/O thread has no players: countApplianceServer counts it")
        case .openAL:
            throw AudioError(.unspecified, "the OpenAL device has no players: countOpenAL counts it")
        case .loopWithRecorder, .loopDriftCorrected:
            let loop = "sonoraloop:bench-refcounts-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let alsa = try ALSADevice(capture: loop, playback: loop, configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: 256, periods: 2, inputChannels: 2, outputChannels: 2,
                sampleFormat: .s16LE, requiresExactPeriod: true, realtimePriority: 70,
                driftCorrection: rig == .loopDriftCorrected ? .on : .automatic))
            guard alsa.correctsDrift == (rig == .loopDriftCorrected) else {
                throw AudioError(.unspecified, "the ALSA device on \(rig): drift correction \(alsa.correctsDrift ? "on" : "off"), not what the rig needs")
            }
            device = alsa
            let io = IOUnit()
            try io.setDevice(alsa)
            let capture = try AudioRecorder(
                url: URL(fileURLWithPath: folder + "/captured.wav"),
                settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 2, bitDepth: 16), inputUnit: io)
            try capture.prepareToRecord()
            recorder = capture
            // The players' output joins the recorder's unit: playback goes on beside capture (IOUnitUsers).
            output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 2, maximumQueues: players)
        }
        guard let unit = output.unit else { throw CounterUnavailable() }
        let tally = UnsafeMutablePointer<DeviceTally>.allocate(capacity: 1)
        tally.initialize(to: DeviceTally())
        var all: [AudioPlayer] = []
        defer {
            all.forEach { $0.stop() }
            recorder?.stop()
            device.stop()
            tally.deinitialize(count: 1)
            tally.deallocate()
        }
        // Through a link loss the stretch across an interruption is split off as an xrun's is.
        let splitsInterruptions = if case .netjackSlaveLinkLoss = rig { true } else { false }
        tally.pointee.armStalls(every: xrunEvery, format: device.format) {  // (released with the tally)
            splitsInterruptions ? device.statistics.xruns + device.statistics.interruptions : device.statistics.xruns
        }
        try unit.addRenderNotify(RenderCallback(function: Self.tallyNotify, context: UnsafeMutableRawPointer(tally)))
        for _ in 0..<players {
            let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: song), output: output)
            player.numberOfLoops = -1
            try player.prepareToPlay()
            all.append(player)
        }
        for player in all { try player.play() }
        try recorder?.record()
        usleep(300_000)
        // A plain store the device thread reads at its next notification (a late look costs a cycle).
        withExtendedLifetime(all) { tally.pointee.armed = true }
        var interludeNote: String?
        if let interlude {
            do {
                interludeNote = try interlude(device)
            } catch {
                tally.pointee.armed = false
                throw error
            }
        }
        usleep(useconds_t(seconds * 1_000_000))
        tally.pointee.armed = false
        usleep(50_000)
        if let recorder, !recorder.isRecording {
            throw AudioError(.unspecified, "the recorder on \(rig) stopped while counted: its capture was not exercised")
        }
        device.stop()
        // Nothing counted would read as "no retains": a rig that did not run fails instead.
        guard tally.pointee.render.spans > 0, tally.pointee.between.spans > 0 else {
            throw AudioError(.unspecified, "the players on \(rig): no render cycle was counted (device cycles \(device.statistics.cycles), xruns \(device.statistics.xruns))")
        }
        // Forced xruns that did not happen would read as "no retains per xrun".
        if xrunEvery > 0, tally.pointee.recoveryXruns == 0, rig.countsItsOwnXruns {
            throw AudioError(.unspecified, "the players on \(rig): \(tally.pointee.stalls) stalls of \(tally.pointee.stallMicroseconds) µs made no xrun (raise --device-seconds or lower --xrun-every)")
        }
        let t = tally.pointee
        return DeviceCounts(
            render: t.render, between: t.between, recovery: t.recovery, recoveryXruns: t.recoveryXruns, stalls: t.stalls,
            stallMicroseconds: tally.pointee.stallMicroseconds, note: interludeNote)
    }

    /// A stereo (or mono) LV2 unit pulling a constant from a render callback, 512-frame renders.
    static func lv2Cycle(uri: String) throws -> (Int) -> AudioError.Code {
        let frames = 512
        let unit = try LV2Unit(uri: uri, options: .init(sampleRate: 48000, maximumFrames: frames, workerMode: .inline))
        for input in 0..<unit.elementCount(.input) {
            try unit.setRenderCallback(GraphBenchmark.Constant(), input: input)
        }
        try unit.initialize()
        let channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        let list = buffers.list
        return { cycle in
            var flags = RenderActionFlags()
            return withExtendedLifetime(buffers) {
                unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), bus: 0, frameCount: frames, into: list)
            }
        }
    }
}
