import CALSA
import Logging
import SonoraCore
import SonoraDSP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An ALSA capture/playback pair (either may be absent) driven by one realtime I/O
/// thread: each cycle reads one capture period, calls the procedure, writes one playback
/// period, straight through the mmap areas where the PCM has mmap.
///
/// The thread waits for each period in `poll` (the default), or, with
/// `configuration.wakeUp = .timer(headroomMicroseconds:)`, on an absolute CLOCK_MONOTONIC
/// timer set by a `PeriodPredictor` (a DLL on the hardware pointer) the headroom before
/// the period is predicted ready; it then reads the pointer until the period is there.
/// A cycle whose pointer misses its prediction falls back to poll; after
/// `timerMissLimit` misses in a row the rest of the run polls (a pointer not to trust).
///
/// Duplex streams start together (`snd_pcm_link` where the PCMs support it, otherwise
/// back to back) with the playback buffer prefilled, so the round trip is exactly
/// `periods × period`. Xruns are counted, timed and recovered (drop, prepare, prefill,
/// restart) with the procedure untouched; a suspended PCM is resumed; a failed or
/// vanished one becomes an interruption: the I/O thread reports it and idles, and a
/// normal-priority control thread re-opens the PCMs with back-off and hands them back
/// (opening allocates; the I/O thread never does).
public final class ALSADevice: AudioDevice, @unchecked Sendable {
    public let driver = "alsa"
    public let captureName: String?
    public let playbackName: String?
    public let configuration: AudioDeviceConfiguration
    public private(set) var format: DeviceFormat
    /// Failure injection for tests (the ALSA chokepoint consults it).
    public let faults: PCMFaults

    private let alsaConfiguration: String
    private let tree: OpaquePointer
    private var capture: ALSAPCM? { didSet { pcms.capture = capture.map { Unmanaged.passUnretained($0) } } }
    private var playback: ALSAPCM? { didSet { pcms.playback = playback.map { Unmanaged.passUnretained($0) } } }
    /// The I/O thread's view of `capture` and `playback`, unretained: loading those optional
    /// class properties into locals retained and released each of them every cycle (three
    /// pairs per duplex cycle, `sonora-bench refcounts`). They own the PCMs and are replaced
    /// only while the I/O thread is stopped or idles in `awaitRecovery`.
    private var pcms: (capture: Unmanaged<ALSAPCM>?, playback: Unmanaged<ALSAPCM>?) = (nil, nil)
    private let runner: DeviceRunner
    private var monitor: DeviceMonitor { runner.monitor }
    /// The I/O thread's view of `monitor` for posting events, unretained (the runner owns the
    /// monitor for the device's life): `monitor.post(…)` retained and released the monitor
    /// around the queue's push, a pair per xrun (`sonora-bench refcounts --xrun-every`).
    private let eventMonitor: Unmanaged<DeviceMonitor>
    private let engine: IOEngine
    /// The hand-over of a vanished device between the I/O thread and the control thread.
    private let recovery = Atomic<Int>(Recovery.none)
    private let recoveryAttempts = Atomic<Int32>(0)
    private enum Recovery {
        static let none = 0
        /// The I/O thread lost the device and waits; the control thread re-opens it.
        static let lost = 1
        /// The control thread installed new PCMs; the I/O thread takes over.
        static let restored = 2
    }
    private var linked: Bool
    /// Held by control-side code that replaces the PCMs or reads them from another
    /// thread; never by the I/O thread (it is idle whenever they are replaced).
    private let pcmSwap = ControlLock(())
    /// Present when capture and playback run on independent clocks: capture is resampled
    /// to playback's clock, steering the FIFO fill level.
    private let compensator: DriftCompensator?
    /// The I/O thread's view of `compensator`, unretained (as `pcms`): binding the optional
    /// property (`guard let compensator`) retained and released it every two-clock cycle
    /// (`sonora-bench refcounts`, the drift-corrected rig).
    private let drift: Unmanaged<DriftCompensator>?
    private let fifoChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private static let logger = Logger(label: "sonora.alsa")
    /// Timer-driven wake-ups: the headroom in seconds (nil: poll).
    private let timerHeadroom: Double?
    /// I/O thread only: predicts the next period from the driving stream's pointer.
    private var predictor: PeriodPredictor
    /// I/O thread only: consecutive cycles whose pointer missed its prediction.
    private var timerMisses = 0
    /// I/O thread only: the last timer wait saw the period arrive between two close readings.
    private var timerBracketed = false
    private let timerTrusted = Atomic<Bool>(true)
    private let timerFallbacks = Atomic<Int>(0)
    private let timerWakeUps = Atomic<Int>(0)
    /// Consecutive misses after which timer wake-ups give way to poll for the rest of the run.
    public static let timerMissLimit = 8
    /// When set before `start()`, each cycle records `snd_pcm_delay` of both streams
    /// (after the read and after the write) into the statistics.
    public var samplesReportedDelay = false

    /// Opens `capture` and `playback` (either may be nil) and negotiates; `faults` lets a
    /// test make any ALSA call fail, opening included.
    public init(
        capture: String?, playback: String?, configuration: AudioDeviceConfiguration, alsaConfiguration: String = "",
        faults: PCMFaults = PCMFaults()
    ) throws(AudioError) {
        try configuration.validate()
        self.faults = faults
        guard capture != nil || playback != nil else { throw AudioError(.badDevice, "an ALSA device needs a capture or a playback PCM") }
        captureName = capture
        playbackName = playback
        self.configuration = configuration
        self.alsaConfiguration = alsaConfiguration
        runner = DeviceRunner()
        eventMonitor = Unmanaged.passUnretained(runner.monitor)
        tree = try ALSAConfiguration.tree(extra: alsaConfiguration)
        do {
            let (captured, played) = try Self.openPair(capture: capture, playback: playback, configuration: configuration, tree: tree, faults: faults)
            self.capture = captured
            self.playback = played
            // (Property observers do not run in an initializer.)
            pcms = (captured.map { Unmanaged.passUnretained($0) }, played.map { Unmanaged.passUnretained($0) })
        } catch {
            snd_config_delete(tree)
            throw error
        }
        let period = self.capture?.periodFrames ?? self.playback!.periodFrames
        let buffer = self.playback?.bufferFrames ?? period * configuration.periods
        format = DeviceFormat(
            sampleRate: configuration.sampleRate, periodFrames: period,
            periods: self.playback?.periods ?? self.capture!.periods,
            capture: self.capture?.streamFormat, playback: self.playback?.streamFormat,
            notes: (self.capture?.notes ?? []) + (self.playback?.notes ?? []))
        var independent = false
        if let c = self.capture, let p = self.playback {
            switch configuration.driftCorrection {
            case .on: independent = true
            case .off: independent = false
            case .automatic:
                // Two different sound cards have two clocks. Plugin PCMs (no card: jack,
                // dmix/dsnoop, pulse …) usually share one upstream clock: say `.on` if not.
                let captureCard = c.card, playbackCard = p.card
                independent = captureCard >= 0 && playbackCard >= 0 && captureCard != playbackCard
            }
        }
        if independent {
            // The reported drift averages the loop's integral over ~1.5 s.
            compensator = DriftCompensator(channelCount: self.capture!.channels, periodFrames: period, targetFill: 2.5 * Double(period),
                                           driftAveragingPeriods: Int(1.5 * Double(configuration.sampleRate) / Double(period)))
            drift = Unmanaged.passUnretained(compensator!)
            format.notes.append("capture and playback run on independent clocks; capture is resampled to playback's clock")
            linked = false
        } else {
            compensator = nil
            drift = nil
            linked = Self.link(self.capture, self.playback)
        }
        predictor = PeriodPredictor(periodFrames: period, sampleRate: Double(configuration.sampleRate))
        if case .timer(let microseconds) = configuration.wakeUp {
            let periodSeconds = Double(period) / Double(configuration.sampleRate)
            var headroom = Double(microseconds) / 1e6
            if headroom > periodSeconds / 2 {
                headroom = periodSeconds / 2
                format.notes.append("wake-up headroom \(microseconds) µs is more than half the \(period)-frame period; \(Int(headroom * 1e6)) µs used")
            }
            timerHeadroom = headroom
        } else {
            timerHeadroom = nil
        }
        fifoChannels = .allocate(capacity: max(1, self.capture?.channels ?? 1))
        fifoChannels.initialize(repeating: UnsafeMutablePointer<Float>(bitPattern: 16)!, count: max(1, self.capture?.channels ?? 1))
        engine = try IOEngine(
            periodFrames: period, sampleRate: configuration.sampleRate,
            inputChannels: self.capture?.channels ?? 0, outputChannels: self.playback?.channels ?? 0,
            outputOffsetFrames: buffer - period, monitor: runner.monitor)
        for note in format.notes { Self.logger.notice("\(note)") }
    }

    deinit {
        stop()
        capture = nil
        playback = nil
        fifoChannels.deallocate()
        snd_config_delete(tree)
    }

    /// True when capture is resampled to playback's clock (independent clocks).
    public var correctsDrift: Bool { compensator != nil }

    /// Links a duplex pair so both start as one; false when the PCMs cannot be linked
    /// (they then start back to back).
    private static func link(_ capture: ALSAPCM?, _ playback: ALSAPCM?) -> Bool {
        guard let capture, let playback else { return false }
        return capture.link(to: playback) >= 0
    }

    /// Capture first: some plugins (jack) need it.
    private static func openPair(
        capture: String?, playback: String?, configuration: AudioDeviceConfiguration, tree: OpaquePointer, faults: PCMFaults
    ) throws(AudioError) -> (ALSAPCM?, ALSAPCM?) {
        let captured = try capture.map { name throws(AudioError) in
            try ALSAPCM(name: name, direction: .capture, channels: configuration.inputChannels, configuration: configuration, tree: tree, faults: faults)
        }
        let played = try playback.map { name throws(AudioError) in
            try ALSAPCM(name: name, direction: .playback, channels: configuration.outputChannels, configuration: configuration, tree: tree, faults: faults)
        }
        if let captured, let played, captured.periodFrames != played.periodFrames {
            throw AudioError(
                .deviceUnsupportedFormat,
                "capture PCM '\(captured.name)' granted period \(captured.periodFrames) but playback PCM '\(played.name)' granted \(played.periodFrames); ask for a period both offer")
        }
        return (captured, played)
    }

    /// True when capture and playback are linked (`snd_pcm_link`) and start as one;
    /// otherwise they start back to back, within one period.
    public var isLinked: Bool { linked }

    public var isRunning: Bool { runner.isRunning }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }
    public var wakeUpLateness: LatenessDistribution { monitor.lateness.distribution() }

    /// True while the I/O thread wakes on its timer: asked for, and the pointer has kept
    /// its predictions (false after `timerMissLimit` misses in a row, until the next start).
    public var usesTimerWakeUps: Bool { timerHeadroom != nil && timerTrusted.load(ordering: .relaxed) }
    /// Cycles whose period was found on the timer (not in poll).
    public var timerWakeUpCycles: Int { timerWakeUps.load(ordering: .relaxed) }
    /// Cycles that fell back to poll because the pointer missed its predicted time.
    public var timerFallbackCycles: Int { timerFallbacks.load(ordering: .relaxed) }

    /// What ALSA reports as the delay of each stream right now (`snd_pcm_delay`), frames.
    public var reportedDelay: (capture: Int?, playback: Int?) {
        pcmSwap.withLock { _ in (capture?.delay(), playback?.delay()) }
    }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        // Stopped during an interruption: the PCMs may be closed; open them here (the
        // caller's thread) or say why not.
        if recovery.load(ordering: .acquiring) != Recovery.none || (capture == nil && playback == nil) {
            pcmSwap.withLock { _ in
                capture = nil
                playback = nil
            }
            let (captured, played) = try Self.openPair(capture: captureName, playback: playbackName, configuration: grantedConfiguration, tree: tree, faults: faults)
            let period = captured?.periodFrames ?? played?.periodFrames
            guard period == format.periodFrames else {
                throw AudioError(.deviceUnsupportedFormat, "the re-opened device granted period \(period ?? 0) instead of \(format.periodFrames); open the device again")
            }
            pcmSwap.withLock { _ in
                capture = captured
                playback = played
            }
            if linked { linked = Self.link(captured, played) }
            recovery.store(Recovery.none, ordering: .releasing)
        }
        engine.procedure = procedure
        timerTrusted.store(true, ordering: .relaxed)
        try runner.start(
            name: "sonora-io", configuration: configuration,
            ioLoop: { [unowned self] in self.ioLoop() },
            control: { [unowned self] in self.controlLoop() })
    }

    public func stop() {
        guard runner.stop() else { return }
        _ = capture?.drop()
        _ = playback?.drop()
    }

    /// The configuration with the period and buffer the device granted (for re-opening).
    private var grantedConfiguration: AudioDeviceConfiguration {
        var exact = configuration
        exact.periodFrames = format.periodFrames
        exact.periods = format.periods
        return exact
    }

    // MARK: The I/O thread

    /// How a cycle ended: `.none` is a good cycle; `.stopping`, a wait the device's stop ended.
    private enum Failure { case none, stopping, xrun(DeviceEvent.Stream), suspended(DeviceEvent.Stream), failed(DeviceEvent.Stream, Int32) }

    private func ioLoop() {
        var needsStart = true
        var lastCycleEnd = HostTime.now.nanoseconds
        while runner.isRunning {
            if needsStart {
                let status = startStreams()
                if status.code < 0 {
                    handle(.failed(status.stream, -status.code), lastCycleEnd: &lastCycleEnd)
                    continue
                }
                engine.restartClock(at: HostTime.now.seconds)
                drift?._withUnsafeGuaranteedRef { $0.reset(keepingRatio: true) }
                predictor.reset()
                timerMisses = 0
                needsStart = false
            }
            let failure = drift == nil ? cycle(lastCycleEnd: &lastCycleEnd) : driftCycle(lastCycleEnd: &lastCycleEnd)
            if case .none = failure { continue }
            handle(failure, lastCycleEnd: &lastCycleEnd)
            needsStart = true
        }
    }

    /// One period: wait, read, render, write. Each PCM is used through `pcms` as a guaranteed
    /// reference, one stretch at a time (`_withUnsafeGuaranteedRef`): a strong local, an
    /// Optional made of a guaranteed reference or a second reference captured into the closure
    /// each cost a retain and a release per cycle (`sonora-bench refcounts` counted them).
    @inline(__always)
    private func cycle(lastCycleEnd: inout UInt64) -> Failure {
        // Capture drives a duplex pair.
        guard let driving = pcms.capture ?? pcms.playback else { return .failed(.playback, ENODEV) }
        let period = engine.periodFrames
        var wake = HostTime.now
        switch driving._withUnsafeGuaranteedRef({ beginPeriod($0, wake: &wake) }) {
        case .none: break
        case .stopping: return .none
        case let failure: return failure
        }
        if let capture = pcms.capture {
            let read = capture._withUnsafeGuaranteedRef { capture -> Failure in
                let read = capture.read(into: engine.inputList, offset: 0, frames: period)
                return read < 0 ? failure(Int32(read), capture) : .none
            }
            guard case .none = read else { return read }
        }
        if let playback = pcms.playback {
            let played = playback._withUnsafeGuaranteedRef { playback -> Failure in
                // Float non-interleaved mmap: render straight into the device's buffer.
                let direct = playback.beginDirectPeriod(frames: period)
                if direct.status < 0 { return failure(direct.status, playback) }
                if let area = direct.list {
                    let engineOutput = engine.cycle.pointee.output
                    engine.cycle.pointee.output = area
                    _ = engine.render()
                    engine.cycle.pointee.output = engineOutput
                    let committed = playback.commitDirectPeriod(frames: period)
                    return committed < 0 ? failure(committed, playback) : .none
                }
                _ = engine.render()
                let written = playback.write(from: engine.outputList, offset: 0, frames: period)
                return written < 0 ? failure(Int32(written), playback) : .none
            }
            guard case .none = played else { return played }
        } else {
            _ = engine.render()
        }
        engine.recordLoad(since: wake.nanoseconds)
        if samplesReportedDelay {
            let delay = (pcms.capture?._withUnsafeGuaranteedRef { $0.delay() } ?? 0) + (pcms.playback?._withUnsafeGuaranteedRef { $0.delay() } ?? 0)
            monitor.reportedDelay.store(delay, ordering: .relaxed)
        }
        noteCycleEnd(wake: wake.nanoseconds, &lastCycleEnd)
        return .none
    }

    /// Waits until `driving` has a period (on the timer, else in poll), then starts it on the
    /// engine's clock: `.none` with the wake-up time in `wake`, or why not.
    @inline(__always)
    private func beginPeriod(_ driving: ALSAPCM, wake: inout HostTime) -> Failure {
        let period = engine.periodFrames
        var avail = timerWait(driving)
        if avail < 0 { return failure(Int32(avail), driving) }
        var timeouts = 0
        while avail == 0 {
            avail = driving.availUpdate()
            if avail < 0 { return failure(Int32(avail), driving) }
            if avail >= period { break }
            avail = 0
            let count = driving.refreshPollDescriptors()
            if count < 0 { return failure(count, driving) }
            let timeout = Int32(max(10.0, engine.periodSeconds * 4000))
            let ready = poll(driving.pollDescriptors, nfds_t(count), timeout)
            guard runner.isRunning else { return .stopping }
            if ready < 0 { if errno == EINTR { continue }; return .failed(driving.direction.event, errno) }
            if ready == 0 {
                timeouts += 1
                if timeouts >= 3 { return .failed(driving.direction.event, EIO) }
                continue
            }
            let revents = driving.revents(count: count)
            if revents & UInt16(POLLERR) != 0 {
                let state = driving.state()
                if state == SND_PCM_STATE_XRUN { return .xrun(driving.direction.event) }
                if state == SND_PCM_STATE_SUSPENDED { return .suspended(driving.direction.event) }
                if state == SND_PCM_STATE_DISCONNECTED { return .failed(driving.direction.event, ENODEV) }
            }
        }
        wake = HostTime.now
        if timerHeadroom != nil { predictor.observe(avail: avail, at: wake.seconds, bracketed: timerBracketed) }
        engine.periodBoundary(at: wake.seconds)
        return .none
    }

    /// One period on two clocks: playback drives; whatever capture has is queued, and one
    /// period is read out of the queue at the rate that keeps it at its target fill.
    @inline(__always)
    private func driftCycle(lastCycleEnd: inout UInt64) -> Failure {
        // One reference per stretch, as in `cycle`: the compensator's stretch reaches the
        // capture PCM through short stretches of its own, never a second captured reference.
        guard let drift, let capture = pcms.capture, let playback = pcms.playback else { return .none }
        let period = engine.periodFrames
        var wake = HostTime.now
        switch playback._withUnsafeGuaranteedRef({ beginPeriod($0, wake: &wake) }) {
        case .none: break
        case .stopping: return .none
        case let failure: return failure
        }
        // Queue what capture has; a capture overrun restarts capture alone.
        let queued = drift._withUnsafeGuaranteedRef { compensator -> Failure in
            var available = capture._withUnsafeGuaranteedRef { $0.availUpdate() }
            if available == -Int(EPIPE) {
                monitor.add(monitor.captureXruns)
                post(.xrun(.capture, nanoseconds: 0, sampleTime: engine.sampleTime))
                capture._withUnsafeGuaranteedRef { capture in
                    _ = capture.drop()
                    _ = capture.prepare()
                    _ = capture.start()
                }
                compensator.reset(keepingRatio: true)
                available = 0
            } else if available < 0 {
                return capture._withUnsafeGuaranteedRef { failure(Int32(available), $0) }
            }
            let channels = capture._withUnsafeGuaranteedRef { $0.channels }
            while available > 0 {
                let chunk = min(available, period)
                guard let region = compensator.writableRegion(frames: chunk) else { break }
                for channel in 0..<channels { fifoChannels[channel] = region.base + channel * region.stride }
                let list = AudioBufferList(channels: fifoChannels, channelCount: channels, frameCount: chunk)
                let read = capture._withUnsafeGuaranteedRef { $0.read(into: list, offset: 0, frames: chunk) }
                if read < 0 { return capture._withUnsafeGuaranteedRef { failure(Int32(read), $0) } }
                compensator.commitWrite(frames: read)
                if read < chunk { break }
                available -= read
            }
            return .none
        }
        guard case .none = queued else { return queued }
        let input = engine.inputList
        let driftPPM = drift._withUnsafeGuaranteedRef { compensator in
            compensator.read(into: { input.samples($0) }, frames: period)
            return compensator.averageDriftPPM
        }
        monitor.driftBits.store(driftPPM.bitPattern, ordering: .relaxed)
        _ = engine.render()
        let written = playback._withUnsafeGuaranteedRef { playback -> Failure in
            let written = playback.write(from: engine.outputList, offset: 0, frames: period)
            return written < 0 ? failure(Int32(written), playback) : .none
        }
        guard case .none = written else { return written }
        engine.recordLoad(since: wake.nanoseconds)
        noteCycleEnd(wake: wake.nanoseconds, &lastCycleEnd)
        return .none
    }

    /// Timer-driven wait: sleeps until the headroom before the predicted period, then reads
    /// the pointer (sleeping again if it is far off, else re-reading) until the period is
    /// there. Returns the frames available (≥ one period), a negative ALSA status, or 0:
    /// poll instead (poll mode, no prediction yet, a missed prediction, stopping).
    @inline(__always)
    private func timerWait(_ pcm: ALSAPCM) -> Int {
        timerBracketed = false
        guard let headroom = timerHeadroom, predictor.isLocked, timerTrusted.load(ordering: .relaxed) else { return 0 }
        let period = engine.periodFrames
        let ready = predictor.nextReady
        Self.sleep(until: ready - headroom)
        // A pointer that keeps its promise reaches the period within the headroom of the
        // prediction; half a period later it did not (stalled, or moves only at interrupts).
        let deadline = ready + engine.periodSeconds / 2
        var lastShort = -1.0
        while runner.isRunning {
            let avail = pcm.availSynced()
            if avail < 0 { return avail }
            let now = HostTime.now.seconds
            if avail >= period {
                // Seen arriving between two readings close together: an exact observation.
                timerBracketed = now - lastShort < 20e-6
                timerMisses = 0
                timerWakeUps.wrappingAdd(1, ordering: .relaxed)
                return avail
            }
            lastShort = now
            if now > deadline { break }
            // Woken before the headroom (a spurious early return): sleep again. Otherwise
            // read again: a pointer that moves in steps says only that the period is up
            // to a step away, so sleeping on its word would wake late.
            if now < ready - headroom - 50e-6 { Self.sleep(until: ready - headroom) }
        }
        guard runner.isRunning else { return 0 }
        timerFallbacks.wrappingAdd(1, ordering: .relaxed)
        timerMisses += 1
        if timerMisses >= Self.timerMissLimit { timerTrusted.store(false, ordering: .relaxed) }
        return 0
    }

    /// Sleeps until host time `seconds` on CLOCK_MONOTONIC (absolute: no drift from the
    /// time spent computing it); returns at once when it has passed.
    @inline(__always)
    private static func sleep(until seconds: Double) {
        guard seconds > 0 else { return }
        let nanoseconds = UInt64(seconds * 1e9)
        var target = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    }

    /// Remembers when the last cycle that finished within its period ended: an xrun's
    /// duration runs from there (a cycle that overran its period may be what caused it).
    @inline(__always)
    private func noteCycleEnd(wake: UInt64, _ lastCycleEnd: inout UInt64) {
        let end = HostTime.now.nanoseconds
        if Double(end &- wake) < engine.periodSeconds * 1e9 { lastCycleEnd = end }
    }

    @inline(__always)
    private func failure(_ status: Int32, _ pcm: ALSAPCM) -> Failure {
        switch -status {
        case EPIPE: .xrun(pcm.direction.event)
        case ESTRPIPE: .suspended(pcm.direction.event)
        case EAGAIN: .none
        default: .failed(pcm.direction.event, -status)
        }
    }

    /// Prepare, prefill the playback buffer with silence, start both (on the I/O thread, after
    /// an xrun too: the PCMs through `pcms`, as in `cycle`, so a recovery retains nothing).
    private func startStreams() -> (code: Int32, stream: DeviceEvent.Stream) {
        if let capture = pcms.capture {
            let status = capture._withUnsafeGuaranteedRef { capture -> Int32 in
                _ = capture.drop()
                return capture.prepare()
            }
            if status < 0 { return (status, .capture) }
        }
        if let playback = pcms.playback {
            let status = playback._withUnsafeGuaranteedRef { playback -> Int32 in
                _ = playback.drop()
                let status = playback.prepare()
                if status < 0 { return status }
                let filled = playback.writeSilence(frames: playback.bufferFrames, scratch: engine.outputList)
                return filled < 0 ? Int32(filled) : 0
            }
            if status < 0 { return (status, .playback) }
            if !linked || pcms.capture == nil {
                if let capture = pcms.capture {
                    let status = capture._withUnsafeGuaranteedRef { $0.start() }
                    if status < 0 { return (status, .capture) }
                }
                let status = playback._withUnsafeGuaranteedRef { $0.start() }
                if status < 0 { return (status, .playback) }
                return (0, .playback)
            }
        }
        if let capture = pcms.capture {
            let status = capture._withUnsafeGuaranteedRef { $0.start() }  // starts the linked playback too
            if status < 0 { return (status, .capture) }
        }
        return (0, .capture)
    }

    private func handle(_ failure: Failure, lastCycleEnd: inout UInt64) {
        switch failure {
        case .none, .stopping:
            return
        case .xrun(let stream):
            if stream == .capture { monitor.add(monitor.captureXruns) } else { monitor.add(monitor.playbackXruns) }
            let began = xrunBegan(stream, lastCycleEnd: lastCycleEnd)
            let status = startStreams()
            let now = HostTime.now.nanoseconds
            // Sample time follows the device: add the periods the xrun skipped.
            let skipped = Int(Double(now &- began) / 1e9 * engine.sampleRate)
            engine.skip(frames: (skipped / engine.periodFrames) * engine.periodFrames)
            monitor.xrunNanoseconds.wrappingAdd(now &- began, ordering: .relaxed)
            post(.xrun(stream, nanoseconds: now &- began, sampleTime: engine.sampleTime))
            lastCycleEnd = now
            if status.code < 0 {
                handle(.failed(status.stream, -status.code), lastCycleEnd: &lastCycleEnd)
            } else {
                engine.restartClock(at: HostTime.now.seconds)
            }
        case .suspended(let stream):
            // (No array of the two: the I/O thread allocates nothing.)
            if let capture = pcms.capture { capture._withUnsafeGuaranteedRef { resume($0) } }
            if let playback = pcms.playback { playback._withUnsafeGuaranteedRef { resume($0) } }
            post(.resumed(stream))
            lastCycleEnd = HostTime.now.nanoseconds
        case .failed(let stream, let code):
            monitor.add(monitor.interruptions)
            post(.interruptionBegan(stream, errno: code))
            guard awaitRecovery() else { return }
            post(.interruptionEnded(attempts: recoveryAttempts.load(ordering: .relaxed)))
            lastCycleEnd = HostTime.now.nanoseconds
        }
    }

    /// Posts `event` for the control side (I/O thread), through the unretained monitor.
    @inline(__always)
    private func post(_ event: DeviceEvent) {
        eventMonitor._withUnsafeGuaranteedRef { $0.post(event) }
    }

    /// When the xrun on `stream` happened: ALSA's trigger time stamp where the driver
    /// sets it at the xrun (kernel drivers), else the end of the last good cycle.
    private func xrunBegan(_ stream: DeviceEvent.Stream, lastCycleEnd: UInt64) -> UInt64 {
        let pcm = stream == .capture ? pcms.capture : pcms.playback
        if let stamp = pcm?._withUnsafeGuaranteedRef({ $0.xrunTime() }), stamp > lastCycleEnd && stamp < HostTime.now.nanoseconds { return stamp }
        return lastCycleEnd
    }

    private func resume(_ pcm: ALSAPCM) {
        var status = pcm.resume()
        var tries = 0
        while status == -EAGAIN && tries < 100 && runner.isRunning {
            usleep(10_000)
            status = pcm.resume()
            tries += 1
        }
    }

    /// On the I/O thread: reports the loss to the control thread and idles until it has
    /// installed re-opened PCMs (true) or the device stops (false). Nothing here
    /// allocates or releases: the old PCMs are closed on the control thread.
    private func awaitRecovery() -> Bool {
        recovery.store(Recovery.lost, ordering: .releasing)
        runner.requestControl()
        while runner.isRunning {
            if recovery.load(ordering: .acquiring) == Recovery.restored {
                recovery.store(Recovery.none, ordering: .relaxed)
                return true
            }
            usleep(5_000)
        }
        return false
    }

    // MARK: The control thread

    /// Waits for the I/O thread to report a lost device, then re-opens it.
    private func controlLoop() {
        while runner.waitForControlRequest() {
            guard recovery.load(ordering: .acquiring) == Recovery.lost else { continue }
            if reopenWithBackOff() { recovery.store(Recovery.restored, ordering: .releasing) }
        }
    }

    /// Closes both PCMs and re-opens them with the granted configuration, waiting 50 ms,
    /// doubling to 2 s between attempts, until it works (true) or the device is stopped.
    /// Runs on the control thread while the I/O thread idles.
    private func reopenWithBackOff() -> Bool {
        pcmSwap.withLock { _ in
            capture = nil
            playback = nil
        }
        let attempts = runner.retryWithBackOff { _ in
            guard let pair = try? Self.openPair(capture: captureName, playback: playbackName, configuration: grantedConfiguration, tree: tree, faults: faults),
                  pair.0?.periodFrames ?? pair.1?.periodFrames == format.periodFrames
            else { return false }
            pcmSwap.withLock { _ in
                capture = pair.0
                playback = pair.1
            }
            if linked { linked = Self.link(pair.0, pair.1) }
            return true
        }
        guard let attempts else { return false }
        recoveryAttempts.store(attempts, ordering: .relaxed)
        return true
    }
}
