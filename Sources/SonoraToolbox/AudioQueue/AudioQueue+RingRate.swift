import SonoraCore

/// A queue of any sample rate on an output of any mix rate, as in Core Audio: the queue's
/// thread converts (its rate stage, before the ring), so the ring and the render side run at
/// the output's rate and the mixer only adds.
///
/// Units. Ring frames (what the render side counts: its position, the end of a stream, the
/// frames of parameter events and ramps) are at the ring's rate. The queue's sample time
/// (AudioQueueGetCurrentTime, an enqueued buffer's start time, `deviceSampleTime(forQueueSampleTime:)`)
/// is in the queue's own stream rate, as Core Audio's is: ring frames × stream rate ÷ ring rate
/// (fractional when the rates differ). Trims stay in stream frames. Device sample times are
/// the output's. A queue on an I/O unit of its own (`setOutputUnit`) or offline plays at its
/// stream rate (the unit converts to the device): there both units agree.
extension AudioQueue {
    /// The ring's rate (call with `lock` held): a shared output's mix rate, else the stream's.
    var ringSampleRateLocked: Double {
        guard offlineFormat == nil, let attachment else { return format.sampleRate }
        return attachment.output.sampleRate
    }

    /// The ring's rate now.
    var ringSampleRate: Double { (try? withLock { ringSampleRateLocked }) ?? format.sampleRate }

    /// Queue sample time (stream rate) per ring frame.
    var queueFramesPerRingFrame: Double { format.sampleRate / ringSampleRate }

    /// The ring frame a queue sample time (a buffer's start time) lands on.
    func ringFrame(forQueueSampleTime sampleTime: Int) -> Int {
        let ringRate = ringSampleRate
        if ringRate == format.sampleRate { return sampleTime }
        return Int((Double(sampleTime) * ringRate / format.sampleRate).rounded())
    }

    /// Frames of a ramp of `seconds` on the ring.
    func ringFrames(forSeconds seconds: Float) -> Int {
        Int((Double(seconds) * ringSampleRate).rounded())
    }

    /// Whether the queue's thread needs a rate stage (time-pitch, or a stream rate that is not
    /// the ring's), and its scale; nil-stage when neither: rate 1 at one rate stays a copy.
    func syncRateStage() {
        let (enabled, ringRate) = (try? withLock { (timePitchEnabled, ringSampleRateLocked) }) ?? (false, format.sampleRate)
        let scale = format.sampleRate / ringRate
        let needed = enabled || scale != 1
        // Settable only while the queue neither runs nor decodes: the stage is idle by then.
        if let stage = rateStage, stage.isIdle, !needed || stage.scale != scale || stage.followsPlayRate != enabled {
            rateStage = nil
        }
        if needed && rateStage == nil {
            rateStage = try? QueueRateStage(channels: renderer.channelCount, scale: scale, followsPlayRate: enabled)
        }
    }
}
