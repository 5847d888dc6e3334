/// A queue's timeline (AudioQueueTimelineRef): reading it gives the queue's sample time
/// and whether time was lost (an underrun) since the previous reading.
public final class AudioQueueTimeline: @unchecked Sendable {
    let queue: AudioQueue

    init(queue: AudioQueue) { self.queue = queue }

    /// The queue's current time (AudioQueueGetCurrentTime).
    public struct Time: Hashable, Sendable {
        /// Frames the queue has played since it was started (silence of an underrun counts; pauses
        /// do not), in the queue's stream rate: on an output of another rate, its frames × stream
        /// rate ÷ output rate (fractional).
        public var sampleTime: Double
        /// Whether the queue's time was discontinuous (an underrun played silence) since the last reading.
        public var discontinuity: Bool
    }

    /// The current time; clears the discontinuity, so each loss of time is reported once.
    public func currentTime() -> Time {
        let ringFrames = queue.renderer.sampleTime
        let scale = queue.queueFramesPerRingFrame
        return Time(sampleTime: scale == 1 ? Double(ringFrames) : Double(ringFrames) * scale, discontinuity: queue.renderer.takeDiscontinuity())
    }
}
