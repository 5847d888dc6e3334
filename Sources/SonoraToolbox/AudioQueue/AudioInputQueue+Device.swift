import SonoraCore
import SonoraUnits

/// Live recording: the queue's capture side becomes the I/O unit's input callback (element 1,
/// capture enabled, output off), in the queue's rate and channel count (the unit converts from
/// the device); `start()` starts the unit, `stop` and `pause` stop it.
extension AudioInputQueue {
    /// Records from `unit` (not initialized yet; the queue enables its input, sets element 1's
    /// client format and input callback, and initializes it); nil detaches it. Only while stopped.
    public func setInputUnit(_ unit: IOUnit?) throws(AudioError) {
        let call = "setInputUnit"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !running else { throw error(.queueInvalidRunState, call, "stop the queue before changing its input") }
        }
        if let old = try withLock({ () throws(AudioError) in inputUnit }) {
            IOUnitUsers.shared.release(.capture, of: old, by: self) { old throws(AudioError) in try old.setInputCallback(nil) }
        }
        guard let unit else {
            try withLock { () throws(AudioError) in
                inputUnit = nil
                inputTarget = nil
            }
            capturer.wakesWorker.store(false, ordering: .relaxed)
            return
        }
        let target = QueueCaptureTarget(capturer: capturer)
        do throws(AudioError) {
            // Capture on; playback stays on only while a player uses the same unit (IOUnitUsers).
            try IOUnitUsers.shared.claim(.capture, of: unit, by: self) { [format] unit throws(AudioError) in
                try unit.setStreamFormat(.canonical(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame)), scope: .output, element: IOUnit.inputElement)
                try unit.setInputCallback(target)
            }
        } catch {
            throw self.error(.queueInvalidDevice, call, "\(unit.name) on '\(unit.deviceName)': \(error.message)")
        }
        try withLock { () throws(AudioError) in
            inputUnit = unit
            inputTarget = target
        }
        session.use(unit)
        // A device's input thread runs on its own clock: it wakes the queue's thread.
        capturer.wakesWorker.store(true, ordering: .relaxed)
    }

    /// The I/O unit the queue records from, if any.
    public var inputUnitInUse: IOUnit? { try? withLock { inputUnit } }
}

/// The I/O unit's input callback: this cycle's captured frames into the queue's ring.
final class QueueCaptureTarget: RenderCallbackTarget, @unchecked Sendable {
    /// Unmanaged, not `unowned(unsafe)` (as IOUnit's cycle target): a call through that can
    /// retain and release the capturer on every cycle. The queue owns the capturer and outlives
    /// the unit's use of this target.
    let capturer: Unmanaged<AudioInputQueueCapturer>

    init(capturer: AudioInputQueueCapturer) {
        self.capturer = .passUnretained(capturer)
        super.init()
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let stamp = request.pointee.timeStamp
        capturer._withUnsafeGuaranteedRef {
            $0.capture(
                request.pointee.buffers, sampleTime: stamp.flags.contains(.sampleTimeValid) ? Int(stamp.sampleTime) : nil,
                hostTime: stamp.flags.contains(.hostTimeValid) ? HostTime(rawValue: stamp.hostTime) : nil)
        }
        return .noError
    }
}
