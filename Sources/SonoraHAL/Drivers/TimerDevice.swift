import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The devices that need no sound card, sharing one I/O thread shape:
/// - **null**: paced on CLOCK_MONOTONIC (absolute `clock_nanosleep` to each period
///   boundary, so lateness never accumulates); captures silence, discards playback. The
///   embedded default on a headless box.
/// - **offline**: as fast as the procedure runs — for files and tests; `run(cycles:)`
///   also drives it from the caller's thread, deterministically.
/// - **inprocess** (the in-process loopback): capture hears playback exactly
///   `latencyFrames` later, for deterministic round-trip tests; paced like null or
///   unpaced. (Not Sonora's ALSA loopback plugin, `sonoraloop`, which is an ALSA PCM.)
public final class TimerDevice: AudioDevice, @unchecked Sendable {
    public enum Mode: Hashable, Sendable {
        case null
        case offline
        case inProcess(latencyFrames: Int, paced: Bool)

        @available(*, deprecated, renamed: "inProcess(latencyFrames:paced:)", message: "the in-process loopback is `inprocess`; `sonoraloop` is the ALSA loopback plugin")
        public static func loopback(latencyFrames: Int, paced: Bool) -> Mode { .inProcess(latencyFrames: latencyFrames, paced: paced) }
    }

    public let mode: Mode
    public let configuration: AudioDeviceConfiguration
    public let format: DeviceFormat
    private let runner = DeviceRunner()
    private var monitor: DeviceMonitor { runner.monitor }
    private let engine: IOEngine
    /// The in-process loopback's delay line (output → input), per channel.
    private let wire: OwnedAudioBufferList?
    private let wireFrames: Int
    private var wirePosition = 0
    private let latencyFrames: Int

    public var driver: String {
        switch mode {
        case .null: "null"
        case .offline: "offline"
        case .inProcess: "inprocess"
        }
    }

    public init(configuration: AudioDeviceConfiguration, mode: Mode) throws(AudioError) {
        try configuration.validate()
        self.mode = mode
        self.configuration = configuration
        let period = configuration.periodFrames
        let label: String = switch mode {
        case .null: "null"
        case .offline: "offline"
        case .inProcess(let frames, _): "inprocess:\(frames)"
        }
        var roundTrip = period * configuration.periods
        if case .inProcess(let frames, _) = mode { roundTrip = frames }
        let capture = configuration.inputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.inputChannels, sampleFormat: "FLOAT", access: "memory", periodFrames: period, periods: configuration.periods, bufferFrames: period * configuration.periods)
            : nil
        let playback = configuration.outputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.outputChannels, sampleFormat: "FLOAT", access: "memory", periodFrames: period, periods: configuration.periods, bufferFrames: roundTrip)
            : nil
        var latency = 0
        if case .inProcess(let frames, _) = mode {
            guard frames >= period && frames <= 1 << 22 else {
                throw AudioError(.parameterError, "in-process loopback latency \(frames) frames out of \(period)…4194304 (at least one period: a cycle cannot hear its own output)")
            }
            latency = frames
        }
        format = DeviceFormat(sampleRate: configuration.sampleRate, periodFrames: period, periods: configuration.periods, capture: capture, playback: playback)
        engine = try IOEngine(
            periodFrames: period, sampleRate: configuration.sampleRate,
            inputChannels: configuration.inputChannels, outputChannels: configuration.outputChannels,
            outputOffsetFrames: 0, monitor: runner.monitor)
        latencyFrames = latency
        if case .inProcess = mode {
            wireFrames = latency + period
            wire = try OwnedAudioBufferList(channelCount: max(1, min(configuration.inputChannels, configuration.outputChannels)), frameCapacity: wireFrames)
            wire!.list.clear()
        } else {
            wireFrames = 0
            wire = nil
        }
    }

    deinit { stop() }

    public var isRunning: Bool { runner.isRunning }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }
    public var wakeUpLateness: LatenessDistribution { monitor.lateness.distribution() }

    private var isPaced: Bool {
        switch mode {
        case .null: true
        case .offline: false
        case .inProcess(_, let paced): paced
        }
    }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        engine.procedure = procedure
        let paced = isPaced
        try runner.start(name: "sonora-\(driver)", configuration: configuration, realtime: paced, ioLoop: { [unowned self] in self.ioLoop(paced: paced) })
    }

    public func stop() {
        runner.stop()
    }

    /// Runs `cycles` periods on the calling thread as fast as possible (offline use;
    /// the device must not be running).
    public func run(cycles: Int, _ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is running on its own thread") }
        engine.procedure = procedure
        if cycles > 0 && monitor.cycles.load(ordering: .relaxed) == 0 { engine.restartClock(at: HostTime.now.seconds) }
        for _ in 0..<cycles {
            engine.periodBoundary(at: engine.loop.nextPeriodStart)
            oneCycle()
        }
    }

    private func ioLoop(paced: Bool) {
        let periodNanoseconds = UInt64(engine.periodSeconds * 1e9)
        var next = HostTime.now.nanoseconds
        engine.restartClock(at: Double(next) / 1e9)
        while runner.isRunning {
            if paced {
                next &+= periodNanoseconds
                var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                let wake = HostTime.now
                engine.periodBoundary(at: wake.seconds)
                oneCycle()
                engine.recordLoad(since: wake.nanoseconds)
                // Fell more than a buffer behind: count it as an xrun and re-anchor.
                let now = HostTime.now.nanoseconds
                if now > next &+ periodNanoseconds &* UInt64(configuration.periods) {
                    monitor.add(monitor.playbackXruns)
                    monitor.xrunNanoseconds.wrappingAdd(now &- next, ordering: .relaxed)
                    monitor.post(.xrun(.playback, nanoseconds: now &- next, sampleTime: engine.sampleTime))
                    next = now
                    engine.restartClock(at: Double(now) / 1e9)
                }
            } else {
                let start = HostTime.now
                engine.periodBoundary(at: engine.loop.nextPeriodStart)
                oneCycle()
                engine.recordLoad(since: start.nanoseconds)
            }
        }
    }

    /// The in-process wire holds output frame t at t mod `wireFrames`; input frame t is
    /// output frame t − latency (silence before the first), so the round trip is exact.
    @inline(__always)
    private func oneCycle() {
        let period = engine.periodFrames
        if let wire {
            let input = engine.inputList
            let channels = min(input.channelCount, wire.channelCount)
            copyWire(from: wire.list, at: (wirePosition - latencyFrames + wireFrames) % wireFrames, into: input, channels: channels, period: period)
            for channel in channels..<input.channelCount { input.samples(channel).update(repeating: 0, count: period) }
        } else {
            engine.inputList.clear()
        }
        _ = engine.render()
        if let wire {
            let output = engine.outputList
            let channels = min(output.channelCount, wire.channelCount)
            var position = wirePosition
            var done = 0
            while done < period {
                let chunk = min(period - done, wireFrames - position)
                for channel in 0..<channels {
                    (wire.list.samples(channel) + position).update(from: output.samples(channel) + done, count: chunk)
                }
                done += chunk
                position = (position + chunk) % wireFrames
            }
            wirePosition = position
        }
    }

    @inline(__always)
    private func copyWire(from wire: AudioBufferList, at start: Int, into input: AudioBufferList, channels: Int, period: Int) {
        var position = start
        var done = 0
        while done < period {
            let chunk = min(period - done, wireFrames - position)
            for channel in 0..<channels {
                (input.samples(channel) + done).update(from: wire.samples(channel) + position, count: chunk)
            }
            done += chunk
            position = (position + chunk) % wireFrames
        }
    }
}
