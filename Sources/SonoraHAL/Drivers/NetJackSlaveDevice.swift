import CJackLoader
import CSonoraSystem
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Sonora as a netjack2 slave (`netjack:slave…`): plays and captures over the network in
/// a JACK master's clock (jackd's `netmanager`, `jack_net_master`, or Sonora's own
/// `NetJackMasterDevice`), with no local JACK server.
///
/// libjacknet owns the I/O thread: it receives the master's cycle, calls the process
/// callback, and sends the reply. The callback reaches the device's preallocated
/// `NetJackSlaveCycle` through an unmanaged pointer and calls the `IOProcedure` once per
/// period with the usual realtime rules. When the master goes silent (link down, master
/// gone) libjacknet calls the restart callback and waits for a master again: that is an
/// interruption; the first cycle after it ends it, with the cycles lost counted.
public final class NetJackSlaveDevice: AudioDevice, @unchecked Sendable {
    public let name: NetJackDeviceName
    public let format: DeviceFormat
    /// The master's name (its host) as it answered.
    public let masterName: String
    /// The network latency master and slave agreed on, in periods.
    public let networkLatencyCycles: Int
    public var driver: String { "netjack" }

    private let net: OpaquePointer
    private let cycle: NetJackSlaveCycle
    private let watcher: NetJackWatcher
    private let running = Atomic<Bool>(false)

    /// Connects to a master (blocks until one answers or `name.timeoutSeconds` pass). The
    /// period and rate are the master's; the channel counts are the configuration's.
    public init(name: NetJackDeviceName, configuration: AudioDeviceConfiguration, logger: Logger = Logger(label: "sonora.netjack")) throws(AudioError) {
        try configuration.validate()
        try JACKLibrary.loadNet(for: "netjack:\(name.text)")
        self.name = name
        var request = jack_slave_t(
            audio_input: Int32(configuration.inputChannels), audio_output: Int32(configuration.outputChannels),
            midi_input: 0, midi_output: 0, mtu: Int32(name.mtu), time_out: Int32(name.timeoutSeconds),
            encoder: name.encoder.code, kbps: Int32(name.kbps), latency: Int32(name.latencyCycles))
        var result = jack_master_t()
        guard let net = sonora_jack_net_slave_open(name.address, Int32(name.port), name.clientName, &request, &result) else {
            throw AudioError(
                .badDevice,
                "netjack:\(name.text): no netjack2 master answered at \(name.address):\(name.port) within \(name.timeoutSeconds) s (is jackd's netmanager loaded there — `jack_load netmanager` — with this multicast address and port, and a route to it?)")
        }
        self.net = net
        masterName = withUnsafeBytes(of: result.master_name) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let period = Int(result.buffer_size)
        let rate = Int(result.sample_rate)
        networkLatencyCycles = name.latencyCycles
        var notes: [String] = []
        if period != configuration.periodFrames { notes.append("period \(period) frames is the master's (asked \(configuration.periodFrames))") }
        if rate != configuration.sampleRate { notes.append("rate \(rate) Hz is the master's (asked \(configuration.sampleRate))") }
        if configuration.requiresExactPeriod && period != configuration.periodFrames {
            sonora_jack_net_slave_close(net)
            throw AudioError(.badDevice, "netjack:\(name.text): the master runs \(period)-frame periods, not \(configuration.periodFrames) (exact period required)")
        }
        let label = "netjack:\(name.text)"
        // The round trip a master that loops our output straight back adds: the network
        // latency, plus one cycle for the master to turn it round.
        let roundTrip = period * (name.latencyCycles + 1)
        let capture = configuration.inputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.inputChannels, sampleFormat: "FLOAT", access: "network", periodFrames: period, periods: name.latencyCycles + 1, bufferFrames: period)
            : nil
        let playback = configuration.outputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.outputChannels, sampleFormat: name.encoder == .float ? "FLOAT" : name.encoder.rawValue.uppercased(), access: "network", periodFrames: period, periods: name.latencyCycles + 1, bufferFrames: roundTrip)
            : nil
        format = DeviceFormat(sampleRate: rate, periodFrames: period, periods: name.latencyCycles + 1, capture: capture, playback: playback, notes: notes)
        do {
            cycle = try NetJackSlaveCycle(periodFrames: period, sampleRate: rate, inputChannels: configuration.inputChannels, outputChannels: configuration.outputChannels)
        } catch {
            sonora_jack_net_slave_close(net)
            throw error
        }
        let cycle = cycle
        // Nudged by the restart callback, the watcher sleeps through a healthy link.
        watcher = NetJackWatcher(
            label: label, monitor: cycle.monitor, logger: logger, sleepsUntilNudged: true,
            lostCycles: { cycle.lostCycles.load(ordering: .relaxed) }, recoveries: { cycle.recoveries.load(ordering: .relaxed) })
        cycle.watcherWake = watcher.nudgeDescriptor
        let context = Unmanaged.passUnretained(cycle).toOpaque()
        sonora_jack_set_net_slave_process_callback(net, netJackSlaveProcess, context)
        sonora_jack_set_net_slave_restart_callback(net, netJackSlaveRestart, context)
        sonora_jack_set_net_slave_error_callback(net, netJackSlaveError, context)
    }

    deinit {
        stop()
        sonora_jack_net_slave_close(net)
    }

    public var isRunning: Bool { running.load(ordering: .relaxed) }
    public var statistics: DeviceStatistics { cycle.monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { cycle.monitor.takeEvents() }
    public func resetLoad() { cycle.monitor.resetLoad() }
    /// Empty: the slave's cycles start when the master's packets come, so their lateness
    /// against the loop's prediction is the master's and the network's, not this host's
    /// wake-up (the cycle does not record it; see `NetJackSlaveCycle.process`).
    public var wakeUpLateness: LatenessDistribution { LatenessDistribution() }
    /// Master cycles missed while the network was interrupted (by the slave's clock).
    public var lostCycles: Int { cycle.lostCycles.load(ordering: .relaxed) }
    /// Packets libjacknet reported as damaged (sync or data) — each one a period partly lost.
    public var packetErrors: Int { cycle.packetErrors.load(ordering: .relaxed) }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !running.load(ordering: .relaxed) else { throw AudioError(.illegalOperation, "device is already running") }
        cycle.engine.procedure = procedure
        cycle.stopping.store(false, ordering: .relaxed)
        try watcher.start()
        // The process thread starts here, so it runs in this thread's network namespace.
        guard sonora_jack_net_slave_activate(net) == 0 else {
            watcher.stop()
            throw AudioError(.badDevice, "netjack:\(name.text): libjacknet could not start its process thread")
        }
        running.store(true, ordering: .relaxed)
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        // A restart in progress gives up instead of waiting for a master again.
        cycle.stopping.store(true, ordering: .relaxed)
        sonora_jack_net_slave_deactivate(net)
        watcher.stop()
    }
}

/// What the slave's process callback works on, reached through an unmanaged pointer:
/// the engine (period buffers, clock, procedure) and the interruption bookkeeping.
final class NetJackSlaveCycle: @unchecked Sendable {
    let monitor = DeviceMonitor()
    let engine: IOEngine
    let inputChannels: Int
    let outputChannels: Int
    let periodNanoseconds: UInt64
    let stopping = Atomic<Bool>(false)
    let interrupted = Atomic<Bool>(false)
    let restartAttempts = Atomic<Int>(0)
    let lostCycles = Atomic<Int>(0)
    let recoveries = Atomic<Int>(0)
    let packetErrors = Atomic<Int>(0)
    /// When the last cycle ran (ns, CLOCK_MONOTONIC); 0 before the first.
    let lastCycle = Atomic<UInt64>(0)
    /// The vDSO's clock_gettime, called straight from this object's (warm) state: through
    /// libc, each cycle's first clock read loaded `_rtld_global_ro` via libc's GOT, two cold
    /// pages after every sleep in `recv` (2.1 % of the thread's samples; BENCHMARKS.md).
    private let clock: @convention(c) (clockid_t, UnsafeMutablePointer<timespec>?) -> Int32 = sonora_vdso_clock_function()!
    /// The watcher's eventfd, signalled when an interruption begins (set once, before the
    /// device starts; the device holds the watcher, which owns the descriptor, and stops
    /// libjacknet before letting it go). A descriptor, not a reference: loading a weak
    /// reference on libjacknet's thread retained the watcher.
    var watcherWake: Int32 = -1

    /// Channel pointer arrays for the cycles that render straight in libjacknet's buffers:
    /// the inputs', then the outputs', in one allocation (one cache line to bring back
    /// after each sleep in `recv` rather than two, up to 8 channels in all).
    private let lentPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let lentInputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let lentOutputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let lentInput: AudioBufferList
    private let lentOutput: AudioBufferList

    init(periodFrames: Int, sampleRate: Int, inputChannels: Int, outputChannels: Int) throws(AudioError) {
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        // Until lent, each slot points at the engine's own buffer (never dangling).
        lentPointers = .allocate(capacity: max(1, inputChannels) + max(1, outputChannels))
        lentInputPointers = lentPointers
        lentOutputPointers = lentPointers + max(1, inputChannels)
        periodNanoseconds = UInt64(periodFrames) * 1_000_000_000 / UInt64(sampleRate)
        do {
            engine = try IOEngine(
                periodFrames: periodFrames, sampleRate: sampleRate, inputChannels: inputChannels, outputChannels: outputChannels,
                outputOffsetFrames: 0, monitor: monitor)
        } catch {
            lentPointers.deallocate()
            throw error
        }
        for channel in 0..<inputChannels { lentInputPointers[channel] = engine.ownInputList.samples(channel) }
        for channel in 0..<outputChannels { lentOutputPointers[channel] = engine.ownOutputList.samples(channel) }
        lentInput = AudioBufferList(channels: lentInputPointers, channelCount: inputChannels, frameCount: periodFrames)
        lentOutput = AudioBufferList(channels: lentOutputPointers, channelCount: outputChannels, frameCount: periodFrames)
    }

    deinit {
        lentPointers.deallocate()
    }

    /// One master cycle, on libjacknet's thread: network input → procedure → network output.
    @inline(__always)
    func process(
        frames: Int, audioInputs: Int, inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
        audioOutputs: Int, outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    ) -> Int32 {
        let wake = now()
        let last = lastCycle.load(ordering: .relaxed)
        if last == 0 {
            engine.restartClock(at: wake.seconds)
        } else if interrupted.load(ordering: .relaxed) {
            // Back after an interruption: the master's clock ran on meanwhile.
            let gap = wake.nanoseconds &- last
            let lost = max(0, Int((gap + periodNanoseconds / 2) / periodNanoseconds) - 1)
            lostCycles.wrappingAdd(lost, ordering: .relaxed)
            engine.skip(frames: lost * engine.periodFrames)
            engine.restartClock(at: wake.seconds)
            interrupted.store(false, ordering: .releasing)
            recoveries.wrappingAdd(1, ordering: .relaxed)
            monitor.post(.interruptionEnded(attempts: Int32(truncatingIfNeeded: restartAttempts.exchange(0, ordering: .relaxed))))
        } else {
            // Only the delay-locked loop (time stamps, rate against the host clock), not
            // `periodBoundary`'s lateness histogram and jitter counters: the master's
            // packets start this cycle, so its lateness is the master's and the network's,
            // and recording it cost cold cache lines every cycle (profile in BENCHMARKS.md).
            // (As `wake.seconds`, through Int64: the same value for any host time below 2⁶³ ns,
            // converted in one instruction instead of UInt64's two with a constant from .rodata.)
            engine.loop.update(at: Double(Int64(bitPattern: wake.nanoseconds)) / 1e9)
            monitor.rateScalarBits.store(engine.loop.rateScalar.bitPattern, ordering: .relaxed)
        }
        if frames == engine.periodFrames, lendChannels(audioInputs: audioInputs, inputs: inputs, audioOutputs: audioOutputs, outputs: outputs) {
            // libjacknet's own buffers are the cycle's: nothing copied in or out.
            engine.lend(input: lentInput, output: lentOutput)
            _ = engine.render()
            engine.useOwnBuffers()
            if let outputs {
                for channel in outputChannels..<max(audioOutputs, outputChannels) {
                    if let target = outputs[channel] { target.update(repeating: 0, count: frames) }
                }
            }
        } else {
            copyingCycle(frames: frames, audioInputs: audioInputs, inputs: inputs, audioOutputs: audioOutputs, outputs: outputs)
        }
        let end = now().nanoseconds
        engine.recordLoad(from: wake.nanoseconds, to: end)
        lastCycle.store(end, ordering: .relaxed)
        return 0
    }

    /// CLOCK_MONOTONIC through the vDSO pointer (the same clock and values as `HostTime.now`).
    @inline(__always)
    private func now() -> HostTime {
        var spec = timespec()
        _ = clock(CLOCK_MONOTONIC, &spec)
        return HostTime(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    /// Points the lent lists' channels at libjacknet's buffers; false if any the engine
    /// needs is missing (then the cycle copies, filling the gaps with silence).
    @inline(__always)
    private func lendChannels(
        audioInputs: Int, inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
        audioOutputs: Int, outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    ) -> Bool {
        guard audioInputs >= inputChannels, audioOutputs >= outputChannels else { return false }
        for channel in 0..<inputChannels {
            guard let inputs, let buffer = inputs[channel] else { return false }
            lentInputPointers[channel] = buffer
        }
        for channel in 0..<outputChannels {
            guard let outputs, let buffer = outputs[channel] else { return false }
            lentOutputPointers[channel] = buffer
        }
        return true
    }

    /// A cycle whose buffers cannot be lent (a short cycle, a missing channel): copied
    /// through the engine's own buffers.
    private func copyingCycle(
        frames: Int, audioInputs: Int, inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
        audioOutputs: Int, outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    ) {
        let count = min(frames, engine.periodFrames)
        let input = engine.inputList
        for channel in 0..<inputChannels {
            if channel < audioInputs, let inputs, let source = inputs[channel] {
                input.samples(channel).update(from: source, count: count)
                if count < engine.periodFrames { (input.samples(channel) + count).update(repeating: 0, count: engine.periodFrames - count) }
            } else {
                input.samples(channel).update(repeating: 0, count: engine.periodFrames)
            }
        }
        _ = engine.render()
        let output = engine.outputList
        if let outputs {
            for channel in 0..<min(audioOutputs, outputChannels) {
                if let target = outputs[channel] { target.update(from: output.samples(channel), count: count) }
            }
            for channel in min(audioOutputs, outputChannels)..<max(audioOutputs, 0) {
                if let target = outputs[channel] { target.update(repeating: 0, count: frames) }
            }
        }
    }

    /// The master went silent; libjacknet is about to look for one again (its restart
    /// path, not a cycle). Returns non-zero (give up) once the device is stopping.
    func networkLost() -> Int32 {
        if stopping.load(ordering: .relaxed) { return 1 }
        restartAttempts.wrappingAdd(1, ordering: .relaxed)
        if !interrupted.exchange(true, ordering: .acquiringAndReleasing) {
            monitor.add(monitor.interruptions)
            monitor.post(.interruptionBegan(.capture, errno: ETIMEDOUT))
            if watcherWake >= 0 { sonora_eventfd_signal(watcherWake) }
        }
        return 0
    }
}

// libjacknet's callbacks: C functions reaching the cycle state without reference counting.

private let netJackSlaveProcess: JackNetSlaveProcessCallback = { frames, audioInputs, inputs, _, _, audioOutputs, outputs, _, _, context in
    Unmanaged<NetJackSlaveCycle>.fromOpaque(context!)._withUnsafeGuaranteedRef { cycle in
        cycle.process(frames: Int(frames), audioInputs: Int(audioInputs), inputs: inputs, audioOutputs: Int(audioOutputs), outputs: outputs)
    }
}

private let netJackSlaveRestart: JackNetSlaveRestartCallback = { context in
    Unmanaged<NetJackSlaveCycle>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.networkLost() }
}

private let netJackSlaveError: JackNetSlaveErrorCallback = { _, context in
    Unmanaged<NetJackSlaveCycle>.fromOpaque(context!)._withUnsafeGuaranteedRef { cycle in
        _ = cycle.packetErrors.wrappingAdd(1, ordering: .relaxed)
    }
}
