import SonoraCore

/// Device time (AudioQueueDeviceGetCurrentTime, AudioQueueDeviceTranslateTime,
/// AudioQueueDeviceGetNearestStartTime) and the queue ⇄ device translation.
///
/// Device time is the live output's: the sample time of its I/O cycles (in the output's
/// client rate) and the host time (ns) at which each such sample is heard, read from the
/// stamp of the slice the output rendered last. Queue time is the timeline's: time played
/// since the start (underrun silence included) in the queue's own stream rate (as Core
/// Audio's), so device time = origin + queue time × output rate ÷ stream rate, the origin
/// being where the queue's sample 0 played (moved on by a pause).
extension AudioQueue {
    /// The device's current time: the sample heard now and now's host time, with the
    /// device clock's rate scalar.
    public func deviceCurrentTime() throws(AudioError) -> AudioTimeStamp {
        let (clock, anchor) = try deviceReading("deviceCurrentTime")
        let now = HostTime.now.nanoseconds
        let sample = clock.sampleTime(forHostTime: now) ?? Double(anchor.sampleTime)
        return AudioTimeStamp(sampleTime: sample.rounded(.down), hostTime: now, rateScalar: anchor.rateScalar, flags: [.sampleHostTimeValid, .rateScalarValid])
    }

    /// Translates a device time given by its sample time or its host time (whichever
    /// `time.flags` says is valid; sample time first) into both, with the rate scalar.
    public func deviceTranslateTime(_ time: AudioTimeStamp) throws(AudioError) -> AudioTimeStamp {
        let call = "deviceTranslateTime"
        let (clock, anchor) = try deviceReading(call)
        var result = AudioTimeStamp(rateScalar: anchor.rateScalar, flags: [.sampleHostTimeValid, .rateScalarValid])
        if time.flags.contains(.sampleTimeValid) {
            result.sampleTime = time.sampleTime
            result.hostTime = clock.hostTime(forSampleTime: time.sampleTime) ?? 0
        } else if time.flags.contains(.hostTimeValid) {
            result.hostTime = time.hostTime
            result.sampleTime = clock.sampleTime(forHostTime: time.hostTime) ?? 0
        } else {
            throw error(.queueInvalidParameter, call, "the time stamp has neither a valid sample time nor a valid host time")
        }
        return result
    }

    /// The earliest device time a start can still be honoured at: the first sample after
    /// what is already committed to the device (the slice rendered last), plus one slice
    /// (a start command is taken at the start of a slice, and the next may be under way).
    public func deviceNearestStartTime() throws(AudioError) -> AudioTimeStamp {
        let (clock, anchor) = try deviceReading("deviceNearestStartTime")
        let sample = Double(anchor.sampleTime + 2 * anchor.frames)
        return AudioTimeStamp(
            sampleTime: sample, hostTime: clock.hostTime(forSampleTime: sample) ?? 0,
            rateScalar: anchor.rateScalar, flags: [.sampleHostTimeValid, .rateScalarValid])
    }

    /// The device sample time at which the queue's sample time `queueSampleTime` plays (or
    /// played), since its last start.
    public func deviceSampleTime(forQueueSampleTime queueSampleTime: Double) throws(AudioError) -> Double {
        Double(try queueOrigin("deviceSampleTime")) + queueSampleTime / queueFramesPerRingFrame
    }

    /// The queue's sample time at device sample time `deviceSampleTime` (negative before its start).
    public func queueSampleTime(forDeviceSampleTime deviceSampleTime: Double) throws(AudioError) -> Double {
        (deviceSampleTime - Double(try queueOrigin("queueSampleTime"))) * queueFramesPerRingFrame
    }

    // MARK: Internals

    private func deviceReading(_ call: String) throws(AudioError) -> (AudioQueueDeviceClock, AudioQueueDeviceClock.Anchor) {
        let offline = try withLock { () throws(AudioError) -> Bool in
            try requireOpen(call)
            return offlineFormat != nil
        }
        if offline { throw error(.queueInvalidOfflineMode, call, "an offline queue has no device") }
        guard let (clock, running) = liveClock else {
            throw error(.queueInvalidDevice, call, "the queue has no device (setCurrentDevice, setOutput or setOutputUnit)")
        }
        guard running else { throw error(.queueInvalidRunState, call, "the device is not running (start a queue on it)") }
        guard let anchor = clock.anchor else {
            throw error(.queueInvalidRunState, call, "the device has not run a cycle yet since it started")
        }
        return (clock, anchor)
    }

    private func queueOrigin(_ call: String) throws(AudioError) -> Int {
        try withLock { () throws(AudioError) in try requireOpen(call) }
        guard let origin = renderer.originDeviceTime else {
            throw error(.queueInvalidRunState, call, "the queue has not started playing yet")
        }
        return origin
    }
}
