import SonoraCore
import SonoraUnits

/// Live playback (kAudioQueueProperty_CurrentDevice's job, given as the I/O unit to play
/// through): the queue's render side becomes the unit's input 0 render callback, in the
/// queue's rate and channel count (the unit converts to the device); `start()` starts the
/// unit, `stop` stops it (stop after queued: right after the last frame).
extension AudioQueue {
    /// Plays through `unit` (not initialized yet; the queue sets its input 0 format and render
    /// callback and initializes it); nil detaches it. Only while stopped and not offline.
    public func setOutputUnit(_ unit: IOUnit?) throws(AudioError) {
        let call = "setOutputUnit"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !running else { throw error(.queueInvalidRunState, call, "stop the queue before changing its output") }
            guard offlineFormat == nil else {
                throw error(.queueInvalidOfflineMode, call, "the queue renders offline (setOfflineRenderFormat(nil) first)")
            }
        }
        if let old = try withLock({ () throws(AudioError) in outputUnit }) {
            old.stop()
            old.uninitialize()
        }
        guard let unit else {
            try withLock { () throws(AudioError) in
                outputUnit = nil
                outputTarget = nil
            }
            return
        }
        let target = QueueRenderTarget(renderer: renderer)
        do throws(AudioError) {
            try unit.setStreamFormat(.canonical(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame)), scope: .input, element: IOUnit.outputElement)
            try unit.setRenderCallback(target, input: IOUnit.outputElement)
            if !unit.isInitialized { try unit.initialize() }
        } catch {
            throw self.error(.queueInvalidDevice, call, "\(unit.name) on '\(unit.deviceName)': \(error.message)")
        }
        try withLock { () throws(AudioError) in
            outputUnit = unit
            outputTarget = target
        }
    }

    /// The I/O unit the queue plays through, if any.
    public var outputUnitInUse: IOUnit? { try? withLock { outputUnit } }
}

/// The I/O unit's input 0: the queue's render side, called on the device's I/O thread.
final class QueueRenderTarget: RenderCallbackTarget, @unchecked Sendable {
    /// Replaced (while stopped) when DecodeBufferSizeFrames makes a new render side.
    unowned(unsafe) var renderer: AudioQueueRenderer

    init(renderer: AudioQueueRenderer) {
        self.renderer = renderer
        super.init()
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        renderer.render(request.pointee.buffers)
        return .noError
    }
}
