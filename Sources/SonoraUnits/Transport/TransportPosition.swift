/// Where a transport stands at one frame: what Core Audio's host callbacks report to a unit
/// and what LV2's time:Position carries. Beats count the time signature's beat unit (a
/// quarter in 4/4, an eighth in 6/8), as LV2 counts them; the tempo is in those beats per minute.
public struct TransportPosition: BitwiseCopyable, Equatable, Sendable {
    public var isPlaying: Bool
    /// Beats per minute.
    public var tempo: Double
    public var timeSignature: TimeSignature
    /// Frames on the timeline: advances only while playing.
    public var frame: Int64
    /// Beats since the start of the timeline (fractional).
    public var beat: Double

    public init(isPlaying: Bool = false, tempo: Double = 120, timeSignature: TimeSignature = .common, frame: Int64 = 0, beat: Double = 0) {
        self.isPlaying = isPlaying
        self.tempo = tempo
        self.timeSignature = timeSignature
        self.frame = frame
        self.beat = beat
    }

    /// The bar the position is in (0 is the first).
    public var bar: Int64 { Int64((beat / Double(timeSignature.beatsPerBar)).rounded(.down)) }

    /// The beat within the bar (fractional, from 0).
    public var barBeat: Double { beat - Double(bar) * Double(timeSignature.beatsPerBar) }

    /// The beat the current bar starts on (Core Audio's `currentMeasureDownBeat`).
    public var downBeat: Double { Double(bar) * Double(timeSignature.beatsPerBar) }

    /// This position `frames` later at the same tempo (it moves only while playing).
    public func advanced(by frames: Int, sampleRate: Double) -> TransportPosition {
        guard isPlaying && frames != 0 else { return self }
        var next = self
        next.frame += Int64(frames)
        next.beat += Double(frames) * tempo / (60 * sampleRate)
        return next
    }
}
