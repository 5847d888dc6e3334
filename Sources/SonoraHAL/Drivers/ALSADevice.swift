import CALSA
import Logging
import SonoraCore
import SonoraDSP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An ALSA capture/playback pair (either may be absent) driven by one poll-driven
/// realtime I/O thread: each cycle reads one capture period, calls the procedure, writes
/// one playback period, straight through the mmap areas where the PCM has mmap.
///
/// Duplex streams start together (`snd_pcm_link` where the PCMs support it, otherwise
/// back to back) with the playback buffer prefilled, so the round trip is exactly
/// `periods × period`. Xruns are counted, timed and recovered (drop, prepare, prefill,
/// restart) with the procedure untouched; a suspended PCM is resumed; a failed or
/// vanished one becomes an interruption and is re-opened with back-off.
public final class ALSADevice: AudioDevice, @unchecked Sendable {
    public let driver = "alsa"
    public let captureName: String?
    public let playbackName: String?
    public let configuration: AudioDeviceConfiguration
    public private(set) var format: DeviceFormat
    /// Failure injection for tests (the ALSA chokepoint consults it).
    public let faults = PCMFaults()

    private let alsaConfiguration: String
    private let tree: OpaquePointer
    private var capture: ALSAPCM?
    private var playback: ALSAPCM?
    private let monitor = DeviceMonitor()
    private let engine: IOEngine
    private var thread: RealtimeThread?
    private let running = Atomic<Bool>(false)
    private let linked: Bool
    /// Present when capture and playback run on independent clocks: capture is resampled
    /// to playback's clock, steering the FIFO fill level.
    private let compensator: DriftCompensator?
    private let fifoChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private static let logger = Logger(label: "sonora.alsa")
    /// When set before `start()`, each cycle records `snd_pcm_delay` of both streams
    /// (after the read and after the write) into the statistics.
    public var samplesReportedDelay = false

    public init(capture: String?, playback: String?, configuration: AudioDeviceConfiguration, alsaConfiguration: String = "") throws(AudioError) {
        try configuration.validate()
        guard capture != nil || playback != nil else { throw AudioError(.badDevice, "an ALSA device needs a capture or a playback PCM") }
        captureName = capture
        playbackName = playback
        self.configuration = configuration
        self.alsaConfiguration = alsaConfiguration
        tree = try ALSAConfiguration.tree(extra: alsaConfiguration)
        do {
            let (captured, played) = try Self.openPair(capture: capture, playback: playback, configuration: configuration, tree: tree, faults: faults)
            self.capture = captured
            self.playback = played
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
            format.notes.append("capture and playback run on independent clocks; capture is resampled to playback's clock")
            linked = false
        } else {
            compensator = nil
            if let c = self.capture, let p = self.playback { linked = c.link(to: p) >= 0 } else { linked = false }
        }
        fifoChannels = .allocate(capacity: max(1, self.capture?.channels ?? 1))
        fifoChannels.initialize(repeating: UnsafeMutablePointer<Float>(bitPattern: 16)!, count: max(1, self.capture?.channels ?? 1))
        engine = try IOEngine(
            periodFrames: period, sampleRate: configuration.sampleRate,
            inputChannels: self.capture?.channels ?? 0, outputChannels: self.playback?.channels ?? 0,
            outputOffsetFrames: buffer - period, monitor: monitor)
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

    public var isRunning: Bool { running.load(ordering: .relaxed) }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }

    /// What ALSA reports as the delay of each stream right now (`snd_pcm_delay`), frames.
    public var reportedDelay: (capture: Int?, playback: Int?) {
        (capture?.delay(), playback?.delay())
    }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        engine.procedure = procedure
        if configuration.locksMemory { RealtimeThread.lockMemory() }
        running.store(true, ordering: .releasing)
        let name = "sonora-io"
        do {
            thread = try RealtimeThread(
                RealtimeThreadOptions(name: name, priority: configuration.realtimePriority, cpu: configuration.cpu)
            ) { [unowned self] in self.ioLoop() }
        } catch {
            running.store(false, ordering: .relaxed)
            throw error
        }
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        thread?.join()
        thread = nil
        _ = capture?.drop()
        _ = playback?.drop()
    }

    // MARK: The I/O thread

    private enum Failure { case none, xrun(DeviceEvent.Stream), suspended(DeviceEvent.Stream), failed(DeviceEvent.Stream, Int32) }

    private func ioLoop() {
        var needsStart = true
        var lastCycleEnd = HostTime.now.nanoseconds
        while running.load(ordering: .relaxed) {
            if needsStart {
                let status = startStreams()
                if status.code < 0 {
                    handle(.failed(status.stream, -status.code), lastCycleEnd: &lastCycleEnd)
                    continue
                }
                engine.restartClock(at: HostTime.now.seconds)
                compensator?.reset(keepingRatio: true)
                needsStart = false
            }
            let failure = compensator == nil ? cycle(lastCycleEnd: &lastCycleEnd) : driftCycle(lastCycleEnd: &lastCycleEnd)
            if case .none = failure { continue }
            handle(failure, lastCycleEnd: &lastCycleEnd)
            needsStart = true
        }
    }

    /// One period: wait, read, render, write.
    @inline(__always)
    private func cycle(lastCycleEnd: inout UInt64) -> Failure {
        let driving = capture ?? playback!
        let period = engine.periodFrames
        // Wait until the driving stream has a period.
        var timeouts = 0
        while true {
            let avail = driving.availUpdate()
            if avail < 0 { return failure(Int32(avail), driving) }
            if avail >= period { break }
            let count = driving.refreshPollDescriptors()
            if count < 0 { return failure(count, driving) }
            let timeout = Int32(max(10.0, engine.periodSeconds * 4000))
            let ready = poll(driving.pollDescriptors, nfds_t(count), timeout)
            guard running.load(ordering: .relaxed) else { return .none }
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
        let wake = HostTime.now
        engine.periodBoundary(at: wake.seconds)
        if let capture {
            let read = capture.read(into: engine.inputList, offset: 0, frames: period)
            if read < 0 { return failure(Int32(read), capture) }
        }
        if let playback {
            // Float non-interleaved mmap: render straight into the device's buffer.
            let direct = playback.beginDirectPeriod(frames: period)
            if direct.status < 0 { return failure(direct.status, playback) }
            if let area = direct.list {
                let engineOutput = engine.cycle.pointee.output
                engine.cycle.pointee.output = area
                _ = engine.render()
                engine.cycle.pointee.output = engineOutput
                let committed = playback.commitDirectPeriod(frames: period)
                if committed < 0 { return failure(committed, playback) }
            } else {
                _ = engine.render()
                let written = playback.write(from: engine.outputList, offset: 0, frames: period)
                if written < 0 { return failure(Int32(written), playback) }
            }
        } else {
            _ = engine.render()
        }
        engine.recordLoad(since: wake.nanoseconds)
        if samplesReportedDelay {
            let delay = (capture?.delay() ?? 0) + (playback?.delay() ?? 0)
            monitor.reportedDelay.store(delay, ordering: .relaxed)
        }
        noteCycleEnd(wake: wake.nanoseconds, &lastCycleEnd)
        return .none
    }

    /// One period on two clocks: playback drives; whatever capture has is queued, and one
    /// period is read out of the queue at the rate that keeps it at its target fill.
    @inline(__always)
    private func driftCycle(lastCycleEnd: inout UInt64) -> Failure {
        guard let capture, let playback, let compensator else { return .none }
        let period = engine.periodFrames
        var timeouts = 0
        while true {
            let avail = playback.availUpdate()
            if avail < 0 { return failure(Int32(avail), playback) }
            if avail >= period { break }
            let count = playback.refreshPollDescriptors()
            if count < 0 { return failure(count, playback) }
            let ready = poll(playback.pollDescriptors, nfds_t(count), Int32(max(10.0, engine.periodSeconds * 4000)))
            guard running.load(ordering: .relaxed) else { return .none }
            if ready < 0 { if errno == EINTR { continue }; return .failed(.playback, errno) }
            if ready == 0 {
                timeouts += 1
                if timeouts >= 3 { return .failed(.playback, EIO) }
                continue
            }
            _ = playback.revents(count: count)
        }
        let wake = HostTime.now
        engine.periodBoundary(at: wake.seconds)
        // Queue what capture has; a capture overrun restarts capture alone.
        var available = capture.availUpdate()
        if available == -Int(EPIPE) {
            monitor.add(monitor.captureXruns)
            monitor.post(.xrun(.capture, nanoseconds: 0, sampleTime: engine.sampleTime))
            _ = capture.drop()
            _ = capture.prepare()
            _ = capture.start()
            compensator.reset(keepingRatio: true)
            available = 0
        } else if available < 0 {
            return failure(Int32(available), capture)
        }
        while available > 0 {
            let chunk = min(available, period)
            guard let region = compensator.writableRegion(frames: chunk) else { break }
            for channel in 0..<capture.channels { fifoChannels[channel] = region.base + channel * region.stride }
            let list = AudioBufferList(channels: fifoChannels, channelCount: capture.channels, frameCount: chunk)
            let read = capture.read(into: list, offset: 0, frames: chunk)
            if read < 0 { return failure(Int32(read), capture) }
            compensator.commitWrite(frames: read)
            if read < chunk { break }
            available -= read
        }
        let input = engine.inputList
        compensator.read(into: { input.samples($0) }, frames: period)
        monitor.driftBits.store(compensator.averageDriftPPM.bitPattern, ordering: .relaxed)
        _ = engine.render()
        let written = playback.write(from: engine.outputList, offset: 0, frames: period)
        if written < 0 { return failure(Int32(written), playback) }
        engine.recordLoad(since: wake.nanoseconds)
        noteCycleEnd(wake: wake.nanoseconds, &lastCycleEnd)
        return .none
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

    /// Prepare, prefill the playback buffer with silence, start both.
    private func startStreams() -> (code: Int32, stream: DeviceEvent.Stream) {
        if let capture {
            _ = capture.drop()
            let status = capture.prepare()
            if status < 0 { return (status, .capture) }
        }
        if let playback {
            _ = playback.drop()
            var status = playback.prepare()
            if status < 0 { return (status, .playback) }
            let filled = playback.writeSilence(frames: playback.bufferFrames, scratch: engine.outputList)
            if filled < 0 { return (Int32(filled), .playback) }
            if !linked || capture == nil {
                if let capture {
                    status = capture.start()
                    if status < 0 { return (status, .capture) }
                }
                status = playback.start()
                if status < 0 { return (status, .playback) }
                return (0, .playback)
            }
        }
        if let capture {
            let status = capture.start()  // starts the linked playback too
            if status < 0 { return (status, .capture) }
        }
        return (0, .capture)
    }

    private func handle(_ failure: Failure, lastCycleEnd: inout UInt64) {
        switch failure {
        case .none:
            return
        case .xrun(let stream):
            if stream == .capture { monitor.add(monitor.captureXruns) } else { monitor.add(monitor.playbackXruns) }
            // When the xrun happened: ALSA's trigger time stamp where the driver sets it
            // at the xrun (kernel drivers), else the end of the last good cycle.
            let pcm = stream == .capture ? capture : playback
            var began = lastCycleEnd
            if let stamp = pcm?.xrunTime(), stamp > lastCycleEnd && stamp < HostTime.now.nanoseconds { began = stamp }
            let status = startStreams()
            let now = HostTime.now.nanoseconds
            // Sample time follows the device: add the periods the xrun skipped.
            let skipped = Int(Double(now &- began) / 1e9 * engine.sampleRate)
            engine.skip(frames: (skipped / engine.periodFrames) * engine.periodFrames)
            monitor.xrunNanoseconds.wrappingAdd(now &- began, ordering: .relaxed)
            monitor.post(.xrun(stream, nanoseconds: now &- began, sampleTime: engine.sampleTime))
            lastCycleEnd = now
            if status.code < 0 {
                handle(.failed(status.stream, -status.code), lastCycleEnd: &lastCycleEnd)
            } else {
                engine.restartClock(at: HostTime.now.seconds)
            }
        case .suspended(let stream):
            for pcm in [capture, playback].compactMap({ $0 }) {
                var status = pcm.resume()
                var tries = 0
                while status == -EAGAIN && tries < 100 && running.load(ordering: .relaxed) {
                    usleep(10_000)
                    status = pcm.resume()
                    tries += 1
                }
            }
            monitor.post(.resumed(stream))
            lastCycleEnd = HostTime.now.nanoseconds
        case .failed(let stream, let code):
            monitor.add(monitor.interruptions)
            monitor.post(.interruptionBegan(stream, errno: code))
            reopenWithBackOff()
            lastCycleEnd = HostTime.now.nanoseconds
        }
    }

    /// Closes both PCMs and re-opens them with the granted configuration, waiting 50 ms,
    /// doubling to 2 s between attempts, until it works or the device is stopped.
    /// (Runs on the I/O thread while no audio flows: opening allocates, rendering does not.)
    private func reopenWithBackOff() {
        capture = nil
        playback = nil
        var delay: UInt32 = 50_000
        var attempts: Int32 = 0
        while running.load(ordering: .relaxed) {
            var slept: UInt32 = 0
            while slept < delay && running.load(ordering: .relaxed) {
                usleep(10_000)
                slept += 10_000
            }
            guard running.load(ordering: .relaxed) else { return }
            attempts += 1
            var exact = configuration
            exact.periodFrames = format.periodFrames
            exact.periods = format.periods
            if let pair = try? Self.openPair(capture: captureName, playback: playbackName, configuration: exact, tree: tree, faults: faults),
               pair.0?.periodFrames ?? pair.1?.periodFrames == format.periodFrames
            {
                capture = pair.0
                playback = pair.1
                if let c = capture, let p = playback, linked { _ = c.link(to: p) }
                monitor.post(.interruptionEnded(attempts: attempts))
                return
            }
            delay = min(delay * 2, 2_000_000)
        }
    }
}
