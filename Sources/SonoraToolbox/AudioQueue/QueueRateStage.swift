import SonoraCore
import SonoraDSP

/// Rate conversion on an output queue's thread, between the decoder and the ring: stream
/// frames in (interleaved, at the stream's rate), ring frames out (at the ring's rate: a shared
/// output's mix rate), through libsoxr's variable-rate resampler (varispeed: pitch follows
/// rate). The ratio (stream frames per ring frame) is play rate × `scale`, `scale` being the
/// stream's rate over the ring's (1 when they match); the play rate counts only when
/// `followsPlayRate` (time-pitch enabled).
///
/// Positions are compared with a tolerance of 1e-6 frame: the cursor accumulates `ratio`
/// (not exact in binary, e.g. 44100/48000), and an output that lands on the end of the stream
/// or on a mark up to rounding must count as landing there (exact frame counts).
///
/// Positions. libsoxr computes output only when it is taken, and a new ratio applies from
/// the next output taken; so the stage tracks `cursor`, the stream position (in the segment)
/// of the next output, which advances by the ratio per output. A segment (until the stream
/// ends, a start-time gap, a stop or a reset) of N stream frames plays as the outputs whose
/// position is below N: ⌈N / r⌉ at a constant rate r. Marks (a buffer's parameter events,
/// placed at its first stream frame) come out at the first output at or past their position,
/// and output is taken up to exactly there, so a play-rate event changes the rate on that
/// frame. The filter's lag (about 1.6 stream frames, constant) is not compensated, and libsoxr
/// lets a new ratio take hold about one output early: the signal around a rate change may sit
/// up to about two stream frames off its mark; frame counts are exact.
///
/// At rate 1 the stage copies (bit-exact with time-pitch off) until another rate is asked
/// for; the resampler then takes over for the rest of the segment, first fed the last frames
/// copied (their output dropped) so its filter starts from the signal, not from silence.
final class QueueRateStage {
    struct Mark {
        var position: Int
        var events: [AudioQueueParameterEvent]
    }

    let channels: Int
    /// Stream frames per ring frame at play rate 1 (stream rate ÷ ring rate).
    let scale: Double
    /// Whether play-rate changes apply (time-pitch enabled); otherwise the ratio stays `scale`.
    let followsPlayRate: Bool
    private let resampler: VariableRateResampler
    /// Stream frames not yet fed (interleaved).
    private var input: [Float] = []
    private var inputOffset = 0
    /// Stream frames fed in this segment (copied, or given to the resampler), and ring frames out.
    private var fed = 0
    private var produced = 0
    /// The stream position of the next output, and the ratio it advances by.
    private var cursor: Double = 0
    private var ratio: Double = 1
    /// The rate asked for (the program's, or the last play-rate event's).
    private(set) var requestedRate: Float = 1
    private var engaged = false
    /// While the resampler hears the copied frames again: the position where the real rate starts.
    private var switchAt: (position: Double, ratio: Double)?
    /// Outputs of those frames still to drop.
    private var discard = 0
    private var marks: [Mark] = []
    /// The last frames copied (interleaved).
    private var history: [Float] = []
    private let historyFrames = 64
    private var scratch: [Float] = []
    /// Stream frames beyond the outputs' positions libsoxr is given (its filter's reach).
    private let lookaheadFrames = 256
    private var starved = 0

    /// Play rates span 0.5…2 (kAudioQueueParam_PlayRate).
    static let playRateRange: ClosedRange<Double> = 0.5...2
    private static let tolerance = 1e-6

    init(channels: Int, scale: Double = 1, followsPlayRate: Bool = true) throws(AudioError) {
        self.channels = channels
        self.scale = scale
        self.followsPlayRate = followsPlayRate
        // Every ratio the stage may ask for: scale × 0.5 … scale × 2 (libsoxr's range is symmetric).
        let largest = followsPlayRate ? scale * Self.playRateRange.upperBound : scale
        let smallest = followsPlayRate ? scale * Self.playRateRange.lowerBound : scale
        resampler = try VariableRateResampler(channels: channels, maximumRatio: max(2, largest, 1 / smallest))
    }

    /// The ratio (stream frames per ring frame) at play rate `rate`.
    private func effectiveRatio(_ rate: Float) -> Double {
        followsPlayRate ? Double(rate) * scale : scale
    }

    /// Ring frames from `cursor` to stream position `position` (outputs positioned before it).
    private func outputs(to position: Double) -> Int {
        guard position - cursor > Self.tolerance else { return 0 }
        return Int(((position - cursor) / ratio - Self.tolerance).rounded(.up))
    }

    /// Whether stream frames wait to be fed.
    var hasInput: Bool { inputOffset < input.count }
    /// Stream frames waiting to be fed.
    var inputFrames: Int { (input.count - inputOffset) / channels }
    /// Whether the segment holds nothing (input, frames in the filter, marks).
    var isIdle: Bool { !hasInput && fed == 0 && produced == 0 && marks.isEmpty }

    /// Ring frames still to come before the end of the input appended so far, at the current rate.
    var framesToEnd: Int {
        outputs(to: Double(fed + inputFrames))
    }

    /// Adds stream frames after those appended; `events` apply from the first of them.
    func append(_ samples: [Float], events: [AudioQueueParameterEvent]) {
        if !events.isEmpty { marks.append(Mark(position: fed + inputFrames, events: events)) }
        if inputOffset == input.count {
            input = samples
            inputOffset = 0
        } else {
            input += samples
        }
    }

    /// The rate from the next output on (a program's change: at the output cursor).
    func setRate(_ rate: Float) {
        requestedRate = rate
        let target = effectiveRatio(rate)
        if !engaged {
            if target != 1 { engage(then: target) }
        } else if let pending = switchAt {
            switchAt = (pending.position, target)
        } else if target != ratio {
            try? resampler.setRatio(target)
            ratio = target
        }
    }

    /// Produces up to `maxFrames` ring frames into `output`; returns how many, and appends the
    /// marks passed with their offsets in what was produced.
    func convert(maxFrames: Int, into output: inout [Float], passed: inout [(offset: Int, events: [AudioQueueParameterEvent])]) -> Int {
        var appended = 0
        if !engaged && effectiveRatio(requestedRate) != 1 { engage(then: effectiveRatio(requestedRate)) }
        while appended < maxFrames {
            passMarks(at: appended, passed: &passed)
            let available = inputFrames
            guard available > 0 else { break }
            let wanted = maxFrames - appended
            if !engaged {
                var frames = min(available, wanted)
                if let next = marks.first { frames = min(frames, next.position - fed) }
                appended += copy(frames, into: &output)
                continue
            }
            let limit = outputsBeforeBoundary(min(wanted + discard, 4096))
            // Input for the outputs wanted and the filter's look-ahead, less what libsoxr already
            // holds (it takes all it is given: more would pile up inside it); the rest waits here.
            let needed = Int((cursor + Double(limit) * ratio).rounded(.up)) + lookaheadFrames + starved - fed
            let feed = min(available, max(needed, 0))
            let room = limit
            if scratch.count < room * channels { scratch = [Float](repeating: 0, count: room * channels) }
            let (consumed, made) = input.withUnsafeBufferPointer { source in
                scratch.withUnsafeMutableBufferPointer { sink in
                    resampler.process(source.baseAddress! + inputOffset, frames: feed, into: sink.baseAddress!, capacity: room)
                }
            }
            inputOffset += consumed * channels
            fed += consumed
            appended += take(made, into: &output)
            if consumed == 0 && made == 0 {
                // The filter wants more than the look-ahead allowed: offer more next time round.
                guard starved < 1 << 16 else { break }
                starved += lookaheadFrames
            } else {
                starved = 0
            }
        }
        return appended
    }

    /// Ends the segment: drains the filter (marks and rate events still applying where they
    /// lie) and yields exactly the outputs positioned before the end of the stream frames fed;
    /// returns the frames appended. The next segment starts afresh.
    func endSegment(into output: inout [Float], passed: inout [(offset: Int, events: [AudioQueueParameterEvent])]) -> Int {
        // Whatever waits is fed first (a start-time gap may follow frames still waiting).
        var appended = 0
        while hasInput {
            let made = convert(maxFrames: 1 << 20, into: &output, passed: &passed)
            appended += made
            if made == 0 && hasInput { break }
        }
        if engaged {
            while true {
                passMarks(at: appended, passed: &passed)
                let limit = outputsBeforeBoundary(4096)
                if scratch.count < limit * channels { scratch = [Float](repeating: 0, count: limit * channels) }
                let made = scratch.withUnsafeMutableBufferPointer { resampler.drain(into: $0.baseAddress!, capacity: limit) }
                if made == 0 { break }
                appended += take(made, into: &output)
            }
            // Marks the drain did not reach lie in the padding below.
            for mark in marks {
                passed.append((appended + outputs(to: Double(mark.position)), mark.events))
            }
            marks = []
            // libsoxr's own count at the end differs by a frame or so: outputs below the end, exactly.
            let end = Double(fed)
            if end - cursor > Self.tolerance {
                let missing = outputs(to: end)
                output += [Float](repeating: 0, count: missing * channels)
                appended += missing
            } else {
                let extra = min(Int(((cursor - end) / ratio + Self.tolerance).rounded(.down)), appended)
                output.removeLast(extra * channels)
                appended -= extra
                // A mark at the very end came out with a dropped output: it belongs at the end.
                passed = passed.map { (min($0.offset, appended), $0.events) }
            }
        }
        for mark in marks { passed.append((appended, mark.events)) }
        marks = []
        restart()
        return appended
    }

    /// Drops everything: input, the filter's contents, marks (the rate asked for stays).
    func reset() {
        input = []
        inputOffset = 0
        marks = []
        restart()
    }

    private func restart() {
        if engaged { resampler.reset() }
        engaged = false
        fed = 0
        produced = 0
        cursor = 0
        ratio = 1
        switchAt = nil
        discard = 0
        history = []
    }

    /// Marks at or before the cursor come out here; a play-rate event among them, or the end of
    /// the resampler's priming, changes the ratio from this output on.
    private func passMarks(at offset: Int, passed: inout [(offset: Int, events: [AudioQueueParameterEvent])]) {
        if let pending = switchAt, cursor + Self.tolerance >= pending.position {
            switchAt = nil
            if pending.ratio != ratio {
                try? resampler.setRatio(pending.ratio)
                ratio = pending.ratio
            }
        }
        while let mark = marks.first, Double(mark.position) <= cursor + Self.tolerance {
            marks.removeFirst()
            passed.append((offset, mark.events))
            for event in mark.events where event.parameter == .playRate { setRate(event.value) }
        }
    }

    /// Outputs to take (at most `wanted`) before the cursor reaches the next mark or switch.
    private func outputsBeforeBoundary(_ wanted: Int) -> Int {
        var boundary = switchAt?.position
        if let mark = marks.first { boundary = min(boundary ?? .infinity, Double(mark.position)) }
        guard let boundary, boundary - cursor > Self.tolerance else { return wanted }
        return max(1, min(wanted, outputs(to: boundary)))
    }

    /// Rate 1 before the resampler took over: a copy.
    private func copy(_ frames: Int, into output: inout [Float]) -> Int {
        guard frames > 0 else { return 0 }
        let part = input[inputOffset..<(inputOffset + frames * channels)]
        output += part
        history += part
        if history.count > historyFrames * channels { history.removeFirst(history.count - historyFrames * channels) }
        inputOffset += frames * channels
        fed += frames
        produced += frames
        cursor = Double(fed)
        return frames
    }

    /// The resampler takes over at the current position: it first hears the last frames copied
    /// at ratio 1 (outputs dropped), then `target` applies from where the copy stopped.
    private func engage(then target: Double) {
        engaged = true
        resampler.reset()
        ratio = 1
        let frames = history.count / channels
        cursor = Double(fed - frames)
        discard = frames
        switchAt = (Double(fed), target)
        var offered = 0
        var sink = [Float](repeating: 0, count: max(frames, 1) * channels)
        while offered < frames {
            let (consumed, made) = history.withUnsafeBufferPointer { source in
                sink.withUnsafeMutableBufferPointer {
                    resampler.process(source.baseAddress! + offered * channels, frames: frames - offered, into: $0.baseAddress!, capacity: frames)
                }
            }
            offered += consumed
            // Outputs here are history at ratio 1: dropped (they never reach `take`).
            cursor += Double(made)
            discard -= made
            if consumed == 0 && made == 0 { break }
        }
        history = []
        if frames == 0 {
            switchAt = nil
            try? resampler.setRatio(target)
            ratio = target
        }
    }

    /// Appends `made` outputs from `scratch`, dropping what is left of the priming; advances the cursor.
    private func take(_ made: Int, into output: inout [Float]) -> Int {
        cursor += Double(made) * ratio
        let dropped = min(made, discard)
        discard -= dropped
        let kept = made - dropped
        guard kept > 0 else { return 0 }
        output += scratch[(dropped * channels)..<(made * channels)]
        produced += kept
        return kept
    }
}
