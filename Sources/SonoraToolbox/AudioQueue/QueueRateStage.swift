import SonoraCore
import SonoraDSP

/// Play-rate conversion on an output queue's thread, between the decoder and the ring:
/// stream frames in (interleaved, at the stream's rate), ring frames out (what the render
/// side plays), through libsoxr's variable-rate resampler (varispeed: pitch follows rate).
///
/// Frame positions map exactly: input fed at rate r counts 1/r ring frames per stream frame
/// (`mapped`), and a segment's end (`endSegment`) yields exactly round(mapped) ring frames —
/// the filter's tail, trimmed or padded by at most a frame or two — so trims, start times,
/// parameter events and the end of a stop-after-queued stream land on exact ring frames.
///
/// At rate 1 the stage copies (bit-exact with time-pitch off) until a rate other than 1 is
/// used; the resampler then takes over for the rest of the segment (until the stream ends,
/// a start-time gap, a stop or a reset), primed with the last frames copied so the signal
/// stays continuous (a step of under two frames in phase: the filter's lag).
final class QueueRateStage {
    let channels: Int
    private let resampler: VariableRateResampler
    /// Stream-domain frames not yet fed (interleaved).
    private var input: [Float] = []
    private var inputOffset = 0
    /// Ring frames the input fed in this segment maps to, and those produced so far.
    private var mapped: Double = 0
    private var produced = 0
    private var engaged = false
    /// Output frames of the priming history still to drop.
    private var discard = 0
    /// The last frames copied (interleaved), the resampler's history when it takes over.
    private var history: [Float] = []
    private let historyFrames = 64
    private var scratch: [Float] = []

    init(channels: Int) throws(AudioError) {
        self.channels = channels
        resampler = try VariableRateResampler(channels: channels, maximumRatio: 2)
    }

    /// Whether stream frames wait to be fed.
    var hasInput: Bool { inputOffset < input.count }
    /// Stream frames waiting to be fed.
    var inputFrames: Int { (input.count - inputOffset) / channels }

    /// Whether the segment holds anything (input or frames in the filter).
    var isIdle: Bool { !hasInput && produced == 0 && mapped == 0 }

    /// Ring frames owed by input already fed (still in the filter).
    var heldBackFrames: Int { max(Int(mapped.rounded()) - produced, 0) }

    /// Adds stream frames after those fed.
    func append(_ samples: [Float]) {
        if inputOffset == input.count {
            input = samples
            inputOffset = 0
        } else {
            input += samples
        }
    }

    /// Feeds input at `rate` until about `maxFrames` ring frames were produced or the input is
    /// used up; appends them to `output` and returns how many.
    func convert(rate: Float, maxFrames: Int, into output: inout [Float]) -> Int {
        guard hasInput, maxFrames > 0 else { return 0 }
        if !engaged && rate == 1 { return copy(maxFrames: maxFrames, into: &output) }
        if !engaged { engage() }
        let ratio = Double(rate)
        try? resampler.setRatio(ratio)
        let available = (input.count - inputOffset) / channels
        let feed = min(available, max(1, Int((Double(maxFrames) * ratio).rounded(.up))))
        let room = Int((Double(feed) / ratio).rounded(.up)) + discard + 1024
        if scratch.count < room * channels { scratch = [Float](repeating: 0, count: room * channels) }
        var fed = 0
        var appended = 0
        while fed < feed {
            let (consumed, made) = input.withUnsafeBufferPointer { source in
                scratch.withUnsafeMutableBufferPointer { sink in
                    resampler.process(source.baseAddress! + inputOffset + fed * channels, frames: feed - fed, into: sink.baseAddress!, capacity: room)
                }
            }
            fed += consumed
            mapped += Double(consumed) / ratio
            appended += keep(made, into: &output)
            if consumed == 0 && made == 0 { break }
        }
        inputOffset += fed * channels
        return appended
    }

    /// Ends the segment: drains the filter and yields exactly the ring frames the fed input
    /// maps to (so the next segment starts on an exact frame); returns the frames appended.
    func endSegment(into output: inout [Float]) -> Int {
        var appended = 0
        if engaged {
            let room = 4096
            if scratch.count < room * channels { scratch = [Float](repeating: 0, count: room * channels) }
            while true {
                let made = scratch.withUnsafeMutableBufferPointer { resampler.drain(into: $0.baseAddress!, capacity: room) }
                if made == 0 { break }
                appended += keep(made, into: &output)
            }
        }
        let target = Int(mapped.rounded())
        if produced > target {
            let extra = min(produced - target, appended)
            output.removeLast(extra * channels)
            appended -= extra
        } else if produced < target {
            output += [Float](repeating: 0, count: (target - produced) * channels)
            appended += target - produced
        }
        restart()
        return appended
    }

    /// Drops everything: input, the filter's contents, the segment's count.
    func reset() {
        input = []
        inputOffset = 0
        restart()
    }

    private func restart() {
        if engaged { resampler.reset() }
        engaged = false
        mapped = 0
        produced = 0
        discard = 0
        history = []
    }

    /// Rate 1 before the resampler took over: a copy.
    private func copy(maxFrames: Int, into output: inout [Float]) -> Int {
        let frames = min((input.count - inputOffset) / channels, maxFrames)
        let part = input[inputOffset..<(inputOffset + frames * channels)]
        output += part
        history += part
        if history.count > historyFrames * channels { history.removeFirst(history.count - historyFrames * channels) }
        inputOffset += frames * channels
        mapped += Double(frames)
        produced += frames
        return frames
    }

    /// The resampler takes over mid-segment: it first hears the last frames copied (at rate 1,
    /// output dropped), so its filter starts from the signal, not from silence.
    private func engage() {
        engaged = true
        resampler.reset()
        let frames = history.count / channels
        guard frames > 0 else { return }
        discard = frames
        var sink = [Float](repeating: 0, count: (frames + 1024) * channels)
        var fed = 0
        while fed < frames {
            let (consumed, made) = history.withUnsafeBufferPointer { source in
                sink.withUnsafeMutableBufferPointer { resampler.process(source.baseAddress! + fed * channels, frames: frames - fed, into: $0.baseAddress!, capacity: frames + 1024) }
            }
            fed += consumed
            discard -= min(made, discard)
            if consumed == 0 && made == 0 { break }
        }
        history = []
    }

    /// Appends `made` frames of `scratch`, after dropping what is left of the priming history.
    private func keep(_ made: Int, into output: inout [Float]) -> Int {
        let dropped = min(made, discard)
        discard -= dropped
        let kept = made - dropped
        guard kept > 0 else { return 0 }
        output += scratch[(dropped * channels)..<(made * channels)]
        produced += kept
        return kept
    }
}
