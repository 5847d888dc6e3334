/// A stretch of input frames a voice read from one queue entry at one step. The mixer's
/// playback-rate resampler pulls ahead of what is heard; the segments let the voice publish
/// the position heard — that many input frames back — rather than the one read.
struct ALVoiceSegment {
    /// Input frames the voice had served when the stretch began.
    var start: Int
    /// Input frames in the stretch.
    var length: Int
    var sequence: Int
    /// Buffer frame at `start`, and buffer frames per input frame.
    var frame: Double
    var step: Double

    /// Stretches remembered per voice: a slice makes one or two, the resampler's look-ahead
    /// spans a few slices at most; older ones are dropped.
    static let capacity = 64
}
