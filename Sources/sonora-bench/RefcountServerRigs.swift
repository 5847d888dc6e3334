import CRefcountCounter
import Foundation
import SonoraCore
import SonoraHAL
import SonoraLV2
@_spi(Benchmark) import SonoraPipeline
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// The realtime threads that serve others: the appliance's own I/O thread (the `sonora run`
/// side, mixing its clients' streams) and the netjack2 slave's thread (libjacknet's, calling
/// Sonora's cycle).
extension RefcountAudit {
    /// The appliance's server side in this process, as `sonora run` builds it
    /// (`PipelineRuntime.serve`: the null device, the session server with roles as in
    /// Configs/appliance-policy.yaml, the pipeline: the device's capture into a `clients` node,
    /// mixed with a local tone, a looping player through an EQ and a splitter, and a 3D mixer
    /// placing the player and a tone, through a meter, a gain, a parametric EQ, a delay, a
    /// reverb beside the dry signal (a splitter, a merger, a channel map), a converter, a voice
    /// processor (the player's EQ'd copy as its reference) and a recorder to the output — every
    /// node kind beside the clients; the device behind the voice-processing I/O unit, so its
    /// cycle cancels the capture first), with clients of
    /// its own attached through `sonora:` devices: 2 playing, 1 recording, 1 doing both, each
    /// looping input to output (`BenchLoop`). Counted on the appliance's I/O thread — the null
    /// device's — in the I/O unit's renders (the graph: the `clients` node's `deliverCapture`
    /// and `mixPlayback`; the cycle end, `finishCycle`, waking every client) and between them,
    /// as the device rigs count. While counted, one more duplex client attaches (a third of
    /// the way in) and leaves (two thirds in): its streams appear in and vanish from the
    /// table the I/O thread walks. The clients' own threads are not counted (the counter
    /// counts per thread).
    ///
    /// With `lv2Plugin` loadable (the `--plugin` of the LV2 case), the mix goes through it too,
    /// as an `lv2` node (linked instances when it is narrower than the pipeline's 2 channels);
    /// otherwise the note says it was left out.
    static func countApplianceServer(seconds: Double, xrunEvery: Int, lv2Plugin: String) throws -> (counts: DeviceCounts, notes: [String]) {
        let socket = "/tmp/sonora-bench-\(getpid())-rcserve.sock"
        unlink(socket)
        defer { unlink(socket) }
        let folder = NSTemporaryDirectory() + "sonora-bench-refcounts-serve-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try SoundsBenchmark.writeWAV(folder + "/melody.wav", samples: QueueBenchmark.sourceSamples(seconds: 1), channels: 2)
        var lv2Note: String?
        do {
            _ = try LV2Unit(uri: lv2Plugin, options: .init(sampleRate: 48000, maximumFrames: 256, workerMode: .inline))
        } catch {
            lv2Note = "the appliance's pipeline: no lv2 node (\(lv2Plugin): \(error))"
        }
        let lv2Node = lv2Note == nil ? "  - {id: effect, kind: lv2, uri: \"\(lv2Plugin)\"}\n" : ""
        let toMeter = lv2Note == nil ? "  - {from: mixer, to: effect}\n  - {from: effect, to: meter}\n" : "  - {from: mixer, to: meter}\n"
        let config = """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: {capture: "null", playback: "null", voice_processing: on}
            nodes:
              - {id: clients, kind: clients}
              - {id: mixer, kind: MultiChannelMixer, inputs: 4}
              - {id: local, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -20 dB}}
              - {id: melody, kind: player, file: \(folder)/melody.wav, loop: true}
              - {id: eq, kind: GraphicEQ, preset: Rock}
              - {id: split, kind: Splitter, outputs: 3}
              - {id: far, kind: tone, parameters: {frequency: 571 Hz, level: -18 dB}}
              - id: scene
                kind: mixer3d
                output: stereo
                sources:
                  - {name: melody, position: [0, 0, -1.5], gain: -6 dB}
                  - {name: far, position: [3, 0, -10]}
              - {id: meter, kind: Meter}
              - {id: trim, kind: Gain, parameters: {gain: -3 dB}}
              - {id: peq, kind: peq}
              - {id: late, kind: delay}
              - {id: fork, kind: Splitter}
              - {id: room, kind: Reverb}
              - {id: pair, kind: merger}
              - {id: map, kind: channel_map, map: [0, 3]}
              - {id: conv, kind: Converter}
              - {id: aec, kind: voice}
              - {id: played, kind: recorder, file: \(folder)/played.wav}
            \(lv2Node)connections:
              - {from: input, to: clients}
              - {from: clients, to: "mixer:0"}
              - {from: local, to: "mixer:1"}
              - {from: melody, to: eq}
              - {from: eq, to: split}
              - {from: "split:0", to: "mixer:2"}
              - {from: "split:1", to: "scene:0"}
              - {from: far, to: "scene:1"}
              - {from: scene, to: "mixer:3"}
            \(toMeter)  - {from: meter, to: trim}
              - {from: trim, to: peq}
              - {from: peq, to: late}
              - {from: late, to: fork}
              - {from: "fork:0", to: "pair:0"}
              - {from: "fork:1", to: room}
              - {from: room, to: "pair:1"}
              - {from: pair, to: map}
              - {from: map, to: conv}
              - {from: conv, to: "aec:0"}
              - {from: "split:2", to: "aec:1"}
              - {from: aec, to: played}
              - {from: played, to: output}
            session:
              socket: \(socket)
              max_clients: 32
              fade_ms: 30
              roles:
                - {name: intercom, priority: 30, interrupts: [media], may_record: true}
                - {name: media, priority: 10, may_record: false}
              categories: {ambient: media, soloAmbient: media, playback: media, record: intercom, playAndRecord: intercom}

            """
        let configuration = try ConfigurationParser.parse(config, file: "refcounts-appliance.yaml")
        let problems = PipelineBuilder.check(configuration)
        guard problems.isEmpty else { throw AudioError(.unspecified, "the appliance rig's config: \(problems.map { "\($0)" }.joined(separator: "; "))") }
        // `serve` publishes the stream table (also when it fails after): unpublished on the way out.
        defer { ServedClientStreams.table = nil }
        let served: PipelineRuntime.Served
        do { served = try PipelineRuntime.serve(configuration) } catch { throw AudioError(.unspecified, "the appliance rig: \(error)") }
        let device = served.device
        let graph = served.pipeline.graph
        guard let io = served.pipeline.io, let sessionServer = served.sessionServer else {
            throw AudioError(.unspecified, "the appliance rig: the pipeline has no I/O unit or no session server")
        }
        let tally = UnsafeMutablePointer<DeviceTally>.allocate(capacity: 1)
        tally.initialize(to: DeviceTally())
        var clients: [(device: ApplianceDevice, loop: BenchLoop)] = []
        defer {
            for client in clients { client.device.stop() }
            clients.removeAll()
            graph.stop()
            try? served.pipeline.finishRecorders()
            sessionServer.stop()
            graph.uninitialize()
            // The null device locked the process's memory (`locksMemory`, as the appliance does).
            RealtimeThread.unlockMemory()
            tally.deinitialize(count: 1)
            tally.deallocate()
        }
        tally.pointee.armStalls(every: xrunEvery, format: device.format) { device.statistics.xruns }  // (released with the tally)
        // After the client streams' cycle end (added by `serve`): its post-render work is counted as the render's.
        try io.addRenderNotify(RenderCallback(function: Self.tallyNotify, context: UnsafeMutableRawPointer(tally)))
        try graph.start()
        sessionServer.start()

        func attach(_ name: String, inputs: Int, outputs: Int) throws -> (device: ApplianceDevice, loop: BenchLoop) {
            let client = try ApplianceDevice(
                socketPath: socket, configuration: AudioDeviceConfiguration(inputChannels: inputs, outputChannels: outputs), clientName: name)
            let loop = BenchLoop()
            try client.start(loop.procedure)
            return (client, loop)
        }
        clients.append(try attach("refcounts-play-1", inputs: 0, outputs: 2))
        clients.append(try attach("refcounts-play-2", inputs: 0, outputs: 2))
        clients.append(try attach("refcounts-record", inputs: 2, outputs: 0))
        clients.append(try attach("refcounts-duplex", inputs: 2, outputs: 2))
        let steadyStreams = 5
        try waitForStreams(sessionServer.streams, count: steadyStreams, timeout: 5)
        usleep(300_000)
        withExtendedLifetime(clients) { tally.pointee.armed = true }
        usleep(useconds_t(seconds / 3 * 1_000_000))
        let joiner = try attach("refcounts-joiner", inputs: 2, outputs: 2)
        try waitForStreams(sessionServer.streams, count: steadyStreams + 2, timeout: 2)
        let joinedAt = tally.pointee.render.spans
        usleep(useconds_t(seconds / 3 * 1_000_000))
        let joinerFrames = joiner.loop.framesPlayed.load(ordering: .relaxed)
        joiner.device.stop()
        let leftAt = tally.pointee.render.spans
        try waitForStreams(sessionServer.streams, count: steadyStreams, timeout: 2, atMost: true)
        usleep(useconds_t(seconds / 3 * 1_000_000))
        tally.pointee.armed = false
        usleep(50_000)
        let streams = sessionServer.streams.snapshot()
        device.stop()
        guard tally.pointee.render.spans > 0, tally.pointee.between.spans > 0 else {
            throw AudioError(.unspecified, "the appliance rig: no render cycle was counted (device cycles \(device.statistics.cycles), xruns \(device.statistics.xruns))")
        }
        if xrunEvery > 0, tally.pointee.recoveryXruns == 0 {
            throw AudioError(.unspecified, "the appliance rig: \(tally.pointee.stalls) stalls of \(tally.pointee.stallMicroseconds) µs made no xrun (raise --device-seconds or lower --xrun-every)")
        }
        // Clients that never ran would leave the mixing untried.
        let idle = clients.filter { $0.loop.framesPlayed.load(ordering: .relaxed) == 0 }.map(\.device.clientName)
        guard idle.isEmpty, joinerFrames > 0 else {
            throw AudioError(.unspecified, "the appliance rig: clients never woken: \((idle + (joinerFrames > 0 ? [] : ["refcounts-joiner"])).joined(separator: ", "))")
        }
        let t = tally.pointee
        let notes = (lv2Note.map { [$0] } ?? []) + [
            "the appliance's I/O thread: \(streams.filter { $0.direction == .playback }.count) playback and \(streams.filter { $0.direction == .capture }.count) capture streams served throughout; a duplex client joined at counted cycle \(joinedAt) and left at \(leftAt) (its streams attached and detached while counted); its clients' underruns \(streams.map(\.underruns).reduce(0, +)), overruns \(streams.map(\.overruns).reduce(0, +))"
        ]
        return (
            DeviceCounts(
                render: t.render, between: t.between, recovery: t.recovery, recoveryXruns: t.recoveryXruns, stalls: t.stalls,
                stallMicroseconds: t.stallMicroseconds),
            notes
        )
    }

    /// Waits until the table holds `count` streams (or, `atMost`, no more than `count`).
    static func waitForStreams(_ table: ApplianceStreamTable, count: Int, timeout: Double, atMost: Bool = false) throws {
        let limit = HostTime.now.seconds + timeout
        var seen = 0
        while HostTime.now.seconds < limit {
            seen = table.snapshot().count
            if atMost ? seen <= count : seen >= count { return }
            usleep(10_000)
        }
        throw AudioError(.unspecified, "the appliance rig: \(seen) client streams attached, \(atMost ? "at most" : "") \(count) expected within \(timeout) s")
    }

    // MARK: The netjack2 slave

    /// The netjack2 rig, counted in this process (inside the slave's network namespace:
    /// `--netjack-rig MASTER`).
    func runNetjackRig(master: String, linkLoss: Bool = false) throws -> JackRigReport {
        guard sonora_refcount_counter_available() != 0, Self.countsKnownOperations() else { throw CounterUnavailable() }
        if linkLoss { return try runNetjackLinkLossRig(master: master) }
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let rig = DeviceRig.netjackSlave(master: master)
        let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: rig, xrunEvery: xrunEvery)
        var heap = HeapTotal()
        append(counted, rig: rig, to: &rows, notes: &notes, heap: &heap)
        if xrunEvery > 0 {
            notes.append("the netjack2 slave: \(counted.stalls) stalls of \(counted.stallMicroseconds) µs forced; a late slave is no xrun of its device (the master does not wait; libjacknet reads what came), so there is no per-xrun row")
        }
        return JackRigReport(rows: rows, notes: notes, heap: heap)
    }

    /// The slave's link taken down while counted (`ip link set eth0 down` in the slave's
    /// namespace, where this child runs) until the device reports the interruption, then up
    /// until it reports the end, then `deviceSeconds` more of renders. The render and the
    /// stretches between renders are rows as every rig's (the realtime rule: 0); the stretch
    /// across the loss — libjacknet's timeout and re-join, the restart callback — is counted
    /// apart and reported, not held to the rule (no audio is due while the master is gone).
    private func runNetjackLinkLossRig(master: String) throws -> JackRigReport {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let rig = DeviceRig.netjackSlaveLinkLoss(master: master)
        let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: rig, xrunEvery: 0) { device in
            usleep(useconds_t(deviceSeconds * 500_000))  // half the window before the loss
            let before = device.statistics
            try Self.setLink(up: false)
            defer { try? Self.setLink(up: true) }
            guard Self.waitFor(seconds: 15, { device.statistics.interruptions > before.interruptions }) else {
                throw AudioError(.unspecified, "the netjack2 slave reported no interruption within 15 s of its link going down")
            }
            usleep(500_000)
            try Self.setLink(up: true)
            var events: [DeviceEvent] = []
            let recovered = Self.waitFor(seconds: 30) {
                events += device.takeEvents()
                return events.contains { if case .interruptionEnded = $0 { true } else { false } }
            }
            guard recovered else { throw AudioError(.unspecified, "the netjack2 slave did not recover within 30 s of its link coming back (events: \(events))") }
            let after = device.statistics
            return "link down and up while counted: \(after.interruptions - before.interruptions) interruption(s), recovered; cycles before the loss \(before.cycles), after recovery \(after.cycles)"
        }
        var heap = HeapTotal()
        // The loss's stretch stays out of the heap total (it is no realtime stretch); its own note says what it did.
        var outside = counted
        outside.recovery = DeviceSpan()
        outside.recoveryXruns = 0
        append(outside, rig: rig, to: &rows, notes: &notes, heap: &heap)
        notes.removeLast()  // the xrun-recovery line `append` writes: replaced by the loss's
        if let note = counted.note { notes.append("the netjack2 slave through a link loss: " + note) }
        notes.append(
            "the netjack2 slave's thread across the link loss (from the last render before it to the first after: libjacknet's timeout and re-join, the device's restart callback, the end posted): \(counted.recovery.count.retains) retains, \(counted.recovery.count.releases) releases, \(counted.recovery.count.heapCalls) heap calls over \(counted.recoveryXruns) interruption(s) in \(counted.recovery.spans) stretch(es); reported, not held to the realtime rule (no audio is due meanwhile)")
        return JackRigReport(rows: rows, notes: notes, heap: heap)
    }

    /// `ip link set eth0 up|down` in this process's network namespace.
    static func setLink(up: Bool) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["link", "set", "eth0", up ? "up" : "down"]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw AudioError(.unspecified, "ip link set eth0 \(up ? "up" : "down") failed (exit \(process.terminationStatus))") }
    }

    /// Polls every 10 ms until `condition` holds (true) or `seconds` pass (false).
    static func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// The netjack2 rig in a child of this program inside a slave network namespace, beside
    /// jackd's netmanager in a master namespace (scripts/netjack-netns.sh, as `sonora-bench
    /// network`: root, iproute2, jackd). With `linkLoss`, the run whose link is taken down and
    /// up while counted, on a network of its own.
    func netjackRig(linkLoss: Bool = false) -> Result<JackRigReport, AudioError> {
        guard let script = IOBenchmark.script(named: "netjack-netns.sh") else {
            return .failure(AudioError(.unspecified, "scripts/netjack-netns.sh not found above sonora-bench"))
        }
        guard getuid() == 0 else { return .failure(AudioError(.unspecified, "network namespaces need root")) }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") else { return .failure(AudioError(.unspecified, "jackd is not installed (Debian: jackd2)")) }
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return .failure(AudioError(.unspecified, "cannot find sonora-bench's own path"))
        }
        // A tag of its own: `sonora-bench network` runs tag 64…1024 (its periods).
        let network = BenchNetwork(script: script, tag: linkLoss ? 8 : 7)
        let what = linkLoss ? "the netjack2 link-loss rig" : "the netjack2 rig"
        defer { network.tearDown() }
        do { try network.up(rate: 48000, period: 256) } catch { return .failure(AudioError(.unspecified, "\(error)")) }
        // A fresh master now and then never answers a slave (`sonora-bench network` sees it too):
        // once more on a master started afresh, and the note says so.
        var failure = AudioError(.unspecified, "\(what) did not run")
        for attempt in 1...2 {
            if attempt > 1 {
                do { try network.restartMaster(rate: 48000, period: 256) } catch { return .failure(failure) }
            }
            switch runNetjackChild(executable: executable, network: network, linkLoss: linkLoss) {
            case .success(var report):
                if attempt > 1 { report.notes.append("\(what) ran on its second try, on a master started afresh (the first: \(failure.message))") }
                return .success(report)
            case .failure(let error):
                failure = error
            }
        }
        return .failure(failure)
    }

    /// One child run of the netjack2 rig in `network`'s slave namespace: its report, or why
    /// not. With `linkLoss`, the run with the link taken down and up.
    private func runNetjackChild(executable: String, network: BenchNetwork, linkLoss: Bool = false) -> Result<JackRigReport, AudioError> {
        // As `sonora-bench network` runs a slave: on the CPU the master is not pinned to.
        runRigChild(
            executable: executable, namespace: "\(network.prefix)-s1", cpu: BenchNetwork.slaveCPU,
            arguments: ["--netjack-rig", network.masterAddress] + (linkLoss ? ["--netjack-link-loss"] : []),
            what: linkLoss ? "the netjack2 link-loss rig in the slave namespace" : "the netjack2 rig in the slave namespace")
    }

    // MARK: The netjack2 master

    /// The netjack2 master rig, counted in this process (inside the master's network
    /// namespace: `--netjack-master-rig`; jack_net_slave runs in the slave's).
    func runNetjackMasterRig() throws -> JackRigReport {
        guard sonora_refcount_counter_available() != 0, Self.countsKnownOperations() else { throw CounterUnavailable() }
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let counted = try Self.countPlayersOnDevice(players: 16, seconds: deviceSeconds, rig: .netjackMaster, xrunEvery: xrunEvery)
        var heap = HeapTotal()
        append(counted, rig: .netjackMaster, to: &rows, notes: &notes, heap: &heap)
        return JackRigReport(rows: rows, notes: notes, heap: heap)
    }

    /// The netjack2 master rig: JACK's jack_net_slave (looping its 2 inputs to its 2 outputs)
    /// in a slave namespace, this program's child with a `netjack:master` device in the
    /// master's (scripts/netjack-netns.sh without jackd; root, iproute2, jack_net_slave).
    func netjackMasterRig() -> Result<JackRigReport, AudioError> {
        guard let script = IOBenchmark.script(named: "netjack-netns.sh") else {
            return .failure(AudioError(.unspecified, "scripts/netjack-netns.sh not found above sonora-bench"))
        }
        guard getuid() == 0 else { return .failure(AudioError(.unspecified, "network namespaces need root")) }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/jack_net_slave") else {
            return .failure(AudioError(.unspecified, "jack_net_slave is not installed (Debian: jackd2)"))
        }
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return .failure(AudioError(.unspecified, "cannot find sonora-bench's own path"))
        }
        let network = BenchNetwork(script: script, tag: 8)
        defer { network.tearDown() }
        do { try network.upNamespaces() } catch { return .failure(AudioError(.unspecified, "\(error)")) }
        let slave: Process
        do { slave = try network.launchAnchorSlave() } catch { return .failure(AudioError(.unspecified, "cannot start jack_net_slave: \(error)")) }
        defer { BenchNetwork.end(slave) }
        // The master on the CPU `sonora-bench network` gives the master; opening waits for the slave.
        return runRigChild(
            executable: executable, namespace: "\(network.prefix)-m", cpu: BenchNetwork.masterCPU,
            arguments: ["--netjack-master-rig"], what: "the netjack2 master rig in the master namespace")
    }

    /// This program's `refcounts` with `arguments` in a child inside `namespace` (pinned to
    /// `cpu`): its JSON report, or why not.
    private func runRigChild(executable: String, namespace: String, cpu: Int?, arguments: [String], what: String) -> Result<JackRigReport, AudioError> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        let pin = cpu.map { ["taskset", "-c", String($0)] } ?? []
        process.arguments = ["netns", "exec", namespace] + pin + [executable, "refcounts"] + arguments + [
            "--device-seconds", "\(deviceSeconds)", "--xrun-every", "\(xrunEvery)",
        ]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { return .failure(AudioError(.unspecified, "cannot run ip netns exec: \(error)")) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let reason = message.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            return .failure(AudioError(.unspecified, "\(what) failed (exit \(process.terminationStatus)): \(reason)"))
        }
        guard let report = try? JSONDecoder().decode(JackRigReport.self, from: data) else {
            return .failure(AudioError(.unspecified, "\(what): its report is not JSON"))
        }
        return .success(report)
    }
}
