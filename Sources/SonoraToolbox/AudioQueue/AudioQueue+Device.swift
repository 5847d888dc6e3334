import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// Live playback, two ways:
/// - a shared output (`setCurrentDevice(_:)`, kAudioQueueProperty_CurrentDevice, or
///   `setOutput(_:)`): the queue is one source of the hidden mixer in front of the device's
///   one I/O unit, beside the other queues on that device;
/// - an I/O unit of the queue's own (`setOutputUnit(_:)`): the queue's render side becomes
///   the unit's input 0 render callback, in the queue's rate and channel count (the unit
///   converts to the device); `start()` starts the unit, `stop` stops it (stop after
///   queued: once the device has played the last frame). While it plays, the queue takes
///   the device's events (a vanished device stops it, as on a shared output).
extension AudioQueue {
    /// What a queue on a shared output holds.
    struct OutputAttachment {
        let output: AudioQueueOutput
        let target: QueueRenderTarget
        /// Acquired by device name (CurrentDevice): the output closes with its last queue.
        let byName: Bool
    }

    /// Plays through `unit` (not initialized yet; the queue sets its input 0 format and render
    /// callback and initializes it); nil detaches it. Only while stopped and not offline.
    /// Leaves a shared output the queue was on.
    public func setOutputUnit(_ unit: IOUnit?) throws(AudioError) {
        let call = "setOutputUnit"
        try requireStoppedAndLive(call)
        stopWatchingOwnUnit()
        if let old = try withLock({ () throws(AudioError) in outputUnit }) {
            IOUnitUsers.shared.release(.playback, of: old, by: self) { old throws(AudioError) in try old.setRenderCallback(nil, input: IOUnit.outputElement) }
        }
        guard let unit else {
            try withLock { () throws(AudioError) in
                outputUnit = nil
                if attachment == nil { outputTarget = nil }
            }
            return
        }
        leaveOutput()
        // Made, set as the unit's callback and published as one step (`rendererLock`, as `join`).
        rendererLock.lock()
        let target = QueueRenderTarget(renderer: renderer, sampleRate: format.sampleRate)
        do throws(AudioError) {
            try IOUnitUsers.shared.claim(.playback, of: unit, by: self) { [format] unit throws(AudioError) in
                try unit.setStreamFormat(.canonical(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame)), scope: .input, element: IOUnit.outputElement)
                try unit.setRenderCallback(target, input: IOUnit.outputElement)
            }
        } catch {
            rendererLock.unlock()
            throw self.error(.queueInvalidDevice, call, "\(unit.name) on '\(unit.deviceName)': \(error.message)")
        }
        _ = try? withLock {
            outputUnit = unit
            outputTarget = target
        }
        rendererLock.unlock()
        session.use(unit)
    }

    /// The I/O unit the queue plays through, if any (its own, or its shared output's).
    public var outputUnitInUse: IOUnit? { try? withLock { outputUnit ?? attachment?.output.unit } }

    /// Plays through `output`, one source of its mix beside the other queues there; nil
    /// leaves it. Only while stopped and not offline. A queue of another sample rate than the
    /// output's converts to it on the queue's thread (AudioQueue+RingRate).
    public func setOutput(_ output: AudioQueueOutput?) throws(AudioError) {
        try requireStoppedAndLive("setOutput")
        try join(output, byName: false)
    }

    /// The shared output the queue plays through, if any.
    public var output: AudioQueueOutput? { try? withLock { attachment?.output } }

    /// kAudioQueueProperty_CurrentDevice: the name of the device the queue plays on (nil:
    /// none, or an I/O unit / output given as an object).
    public var currentDevice: String? {
        try? withLock { attachment.flatMap { $0.byName ? $0.output.deviceName : nil } }
    }

    /// Sets CurrentDevice: the queue joins the shared output of the device called `name`
    /// (opened with the first queue that names it, at that queue's rate and channel count,
    /// with `configuration`'s period and buffer), leaving its previous output; nil leaves.
    /// Only while stopped and not offline. Its listeners run after a change.
    public func setCurrentDevice(_ name: String?, configuration: AudioDeviceConfiguration = AudioDeviceConfiguration(inputChannels: 0)) throws(AudioError) {
        let call = "setCurrentDevice"
        try requireStoppedAndLive(call)
        guard name != currentDevice else { return }
        guard let name else {
            try join(nil, byName: true)
            notify(.currentDevice)
            return
        }
        var settings = configuration
        settings.inputChannels = 0
        settings.sampleRate = Int(format.sampleRate)
        settings.outputChannels = Int(format.channelsPerFrame)
        // The session's preferred rate and I/O buffer duration, where the program set them.
        settings = session.applyingPreferences(to: settings)
        let shared: AudioQueueOutput
        do {
            shared = try AudioQueueOutput.acquire(named: name, sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame), configuration: settings)
        } catch {
            throw self.error(.queueInvalidDevice, call, error.message)
        }
        defer { AudioQueueOutput.releaseIfUnused(shared, acquired: true) }
        try join(shared, byName: true)
        notify(.currentDevice)
    }

    /// Why the queue last stopped on its own (its device went away), or nil; cleared by a start.
    public var stopReason: AudioError? { try? withLock { stopReasonValue } }

    // MARK: Internals

    func requireStoppedAndLive(_ call: String) throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !running else { throw error(.queueInvalidRunState, call, "stop the queue before changing its output") }
            guard offlineFormat == nil else {
                throw error(.queueInvalidOfflineMode, call, "the queue renders offline (setOfflineRenderFormat(nil) first)")
            }
        }
    }

    /// Leaves the current output (unit or shared) and joins `output` (nil: none).
    private func join(_ output: AudioQueueOutput?, byName: Bool) throws(AudioError) {
        if output != nil, output === (try? withLock { attachment?.output }) { return }
        leaveOutput()
        stopWatchingOwnUnit()
        if let unit = try withLock({ () throws(AudioError) in outputUnit }) {
            IOUnitUsers.shared.release(.playback, of: unit, by: self) { unit throws(AudioError) in try unit.setRenderCallback(nil, input: IOUnit.outputElement) }
            try withLock { () throws(AudioError) in
                outputUnit = nil
                outputTarget = nil
            }
        }
        guard let output else { return }
        // The target made from the renderer, attached, published and fed as one step against a
        // decode buffer changed on another thread (`rendererLock`).
        rendererLock.lock()
        let target = QueueRenderTarget(renderer: renderer, sampleRate: output.sampleRate)
        do throws(AudioError) {
            try output.attach(self, target: target)
        } catch {
            rendererLock.unlock()
            throw AudioError(error.code, error.message.replacingOccurrences(of: "AudioQueue.setOutput", with: "AudioQueue.\(byName ? "setCurrentDevice" : "setOutput")"))
        }
        _ = try? withLock {
            attachment = OutputAttachment(output: output, target: target, byName: byName)
            outputTarget = target
        }
        joinFeeder(of: output)
        rendererLock.unlock()
        if let unit = output.unit { session.use(unit) }
    }

    /// Leaves the shared output the queue is on, if any (closing it if it was the last queue
    /// on a device named by CurrentDevice).
    func leaveOutput() {
        guard let left = try? withLock({ () -> OutputAttachment? in
            defer {
                attachment = nil
                if outputUnit == nil { outputTarget = nil }
            }
            return attachment
        }) else { return }
        if let feeder = try? withLock({ feeder }) { leaveFeeder(feeder, waiting: true) }
        left.output.detach(self, target: left.target)
        if left.byName { AudioQueueOutput.releaseIfUnused(left.output, acquired: false) }
    }

    /// The live output's clock (the shared output's, or the queue's own unit's), and whether
    /// its device runs (a stopped device's last reading says nothing about the next start).
    var liveClock: (clock: AudioQueueDeviceClock, running: Bool)? {
        guard let (clock, running) = try? withLock({ () -> (AudioQueueDeviceClock, () -> Bool)? in
            if let attachment { return (attachment.output.mixer.clock, { attachment.output.isRunning }) }
            if let outputUnit, let outputTarget { return (outputTarget.clock, { outputUnit.isRunning }) }
            return nil
        }) else { return nil }
        return (clock, running())
    }

    /// The device went away: stop now (every buffer comes back), with the reason readable
    /// when the IsRunning listener runs.
    func stopBecauseOutputFailed(_ reason: AudioError) {
        guard (try? withLock({ () -> Bool in
            guard lifecycle == .open, running else { return false }
            stopReasonValue = AudioError(reason.code, "AudioQueue: \(name): stopped: \(reason.message)")
            return true
        })) == true else { return }
        try? stop(immediate: true)
    }
}
