import SonoraCore

/// Play rate (kAudioQueueParam_PlayRate) and time-pitch (kAudioQueueProperty_EnableTimePitch,
/// kAudioQueueProperty_TimePitchAlgorithm), as in Core Audio: the rate applies only while
/// time-pitch is enabled, which is set before the queue is primed or started.
///
/// Only varispeed is supported: the queue's thread resamples the decoded stream (libsoxr,
/// variable rate) between the decoder and the ring, so pitch follows the rate and the render
/// side stays as it is (no allocation, no decoding). Trims are in stream frames (before the
/// rate); parameter events and the end of a stop-after-queued stream are on ring frames,
/// mapped from stream frames as the stage feeds them; start times are in the queue's sample
/// time (see AudioQueue+RingRate: the same stage converts a stream to a shared output's rate).
///
/// Latency of a rate change (`setParameter(.playRate, _)`): it applies from the next frame the
/// queue's thread converts; frames already converted play at the old rate. With time-pitch
/// enabled the queue converts only `rateLookaheadFrames` ahead of the render side: at least
/// 2048 frames; live, twice the largest slice the device has taken; offline, the slice being
/// rendered (libsoxr computes output only as it is taken, so its filter adds no latency).
/// A buffer's play-rate event applies from that buffer's first frame.
extension AudioQueue {
    /// kAudioQueueProperty_TimePitchAlgorithm values (AudioQueueTimePitchAlgorithm).
    public enum TimePitchAlgorithm: UInt32, Sendable, CaseIterable {
        case spectral = 0x7370_6563  // 'spec'
        case timeDomain = 0x7469_646F  // 'tido'
        case varispeed = 0x7673_7064  // 'vspd'
    }

    /// kAudioQueueProperty_EnableTimePitch.
    public var isTimePitchEnabled: Bool { (try? withLock { timePitchEnabled }) ?? false }

    /// Enables the play rate; only before the queue is primed or started (or after a stop).
    public func setTimePitchEnabled(_ enabled: Bool) throws(AudioError) {
        let call = "setTimePitchEnabled"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !running && !decoding else {
                throw error(.queueInvalidRunState, call, "time-pitch can change only before prime or start (or after a stop)")
            }
            timePitchEnabled = enabled
        }
        notify(.enableTimePitch)
    }

    /// kAudioQueueProperty_TimePitchAlgorithm: always varispeed (the only one supported).
    public var timePitchAlgorithm: TimePitchAlgorithm { .varispeed }

    public func setTimePitchAlgorithm(_ algorithm: TimePitchAlgorithm) throws(AudioError) {
        let call = "setTimePitchAlgorithm"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard algorithm == .varispeed else {
                throw error(.queueInvalidPropertyValue, call, "time-pitch algorithm \(algorithm) is not supported; only varispeed (pitch follows rate)")
            }
        }
        notify(.timePitchAlgorithm)
    }

    /// As `setTimePitchAlgorithm` with a raw AudioQueueTimePitchAlgorithm four-char code.
    public func setTimePitchAlgorithm(rawValue: UInt32) throws(AudioError) {
        guard let algorithm = TimePitchAlgorithm(rawValue: rawValue) else {
            throw error(.queueInvalidPropertyValue, "setTimePitchAlgorithm", "unknown time-pitch algorithm 0x\(String(rawValue, radix: 16)); only varispeed ('vspd') is supported")
        }
        try setTimePitchAlgorithm(algorithm)
    }

    /// Ring frames the rate stage converts ahead of the render side.
    var rateLookaheadFrames: Int {
        let (offline, slice) = (try? withLock { (offlineFormat != nil, offlineSliceFrames) }) ?? (false, 0)
        let wanted = offline ? max(2048, slice) : max(2048, 2 * largestRenderStep)
        return min(wanted, renderer.ring.capacity)
    }

    /// Feeds the rate stage as far as the lookahead allows (the queue's thread); true if it did something.
    func convertForRing(_ stage: QueueRateStage) -> Bool {
        let consumed = renderer.consumedFrames
        if consumed > consumedSeen { largestRenderStep = max(largestRenderStep, min(consumed - consumedSeen, renderer.ring.capacity / 2)) }
        consumedSeen = consumed
        // The producer's view (this is the ring's producer): `readableFrames` is the consumer's.
        let room = rateLookaheadFrames - (renderer.ring.capacity - renderer.ring.writableFrames)
        guard room > 0 else { return false }
        // The play rate counts only with time-pitch (a stage for a rate change alone ignores it).
        let rate = (try? withLock { timePitchEnabled ? playRateValue : 1 }) ?? 1
        // The program's change applies from the next output (a buffer's event, at its first frame).
        if rate != stage.requestedRate { stage.setRate(rate) }
        let waiting = stage.inputFrames
        var passed: [(offset: Int, events: [AudioQueueParameterEvent])] = []
        let made = stage.convert(maxFrames: room, into: &pendingDecoded, passed: &passed)
        stampPassed(passed)
        decodedTotal += made
        // Input fed without output yet (the filter filling) is progress too.
        return made > 0 || stage.inputFrames < waiting
    }

    /// Ends the rate stage's segment (the stream's end, or a start-time gap): its last frames
    /// and the events it still held go out, on exact ring frames.
    func endRateSegment(_ stage: QueueRateStage) {
        var passed: [(offset: Int, events: [AudioQueueParameterEvent])] = []
        let made = stage.endSegment(into: &pendingDecoded, passed: &passed)
        stampPassed(passed)
        decodedTotal += made
    }

    /// Buffer events the stage passed, at their ring frames (offsets from `decodedTotal`).
    private func stampPassed(_ passed: [(offset: Int, events: [AudioQueueParameterEvent])]) {
        for mark in passed { stampEvents(mark.events, at: decodedTotal + mark.offset) }
    }
}
