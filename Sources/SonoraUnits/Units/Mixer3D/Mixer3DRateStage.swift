import SonoraCore
import SonoraDSP

/// One input's playback rate (0.5…2) on the render side: at rate 1 the input is pulled for
/// exactly the frames rendered; once another rate is asked for, libsoxr's variable-rate
/// resampler (`VariableRateResampler`, prepared and warmed on the control side) takes over
/// and the input is pulled for as many frames as it needs (rate × frames, plus its look-ahead).
///
/// The switch is primed: the resampler first hears the last frames pulled at rate 1 (their
/// outputs dropped, with the stale ones it held), so it starts from the signal rather than
/// from silence, and the first output kept follows the last frame played. Once engaged the
/// stage stays engaged (going back would jump by the filter's lag).
struct Mixer3DRateStage {
    let resampler: Unmanaged<VariableRateResampler>
    let channels: Int
    /// Input frames pulled but not yet taken by the resampler (interleaved).
    let pending: UnsafeMutablePointer<Float>
    let capacity: Int
    var pendingCount = 0
    /// The last frames pulled at rate 1 (interleaved), for priming.
    let history: UnsafeMutablePointer<Float>
    static let historyFrames = 32
    var historyCount = 0
    var engaged = false
    var ratio: Double = 1
    /// Input position (in frames given to the resampler) of the next output, and frames given.
    var position: Double = 0
    var fed = 0
    /// Frames given beyond the outputs' positions: grows to what the filter needs.
    var lookahead = 0
    /// Outputs still to drop (the priming's), and the ratio to take once they are gone.
    var discard = 0
    var target: Double = 1
    /// Where the input's timeline is (its render callbacks' sample times).
    var sampleTime: Double = 0

    /// Outputs the resampler gives before those of the first frame it is given (the silence
    /// it holds from its warm-up, and its filter's lag), measured at warm-up.
    let primingDelay: Int
    /// A mono input's lender (`Mixer3DInputLender`): at rate 1 its samples are read in place.
    var lender: Mixer3DInputLender?

    init(resampler: VariableRateResampler, channels: Int, capacity: Int, primingDelay: Int) {
        self.resampler = Unmanaged.passUnretained(resampler)
        self.primingDelay = primingDelay
        self.channels = channels
        self.capacity = capacity
        pending = .allocate(capacity: capacity * channels)
        history = .allocate(capacity: Self.historyFrames * channels)
    }

    func deallocate() {
        pending.deallocate()
        history.deallocate()
    }

    /// Input frames pulled but not yet heard: what waits, what the filter holds, its look-ahead.
    /// 0 at rate 1 before the stage engages (every frame pulled is rendered in its slice).
    var heldFrames: Double {
        guard engaged else { return 0 }
        return max(0, Double(fed + pendingCount) - position)
    }

    /// Forgets positions (a reset); the resampler keeps its (stale, silent) filter state, since
    /// clearing libsoxr frees memory it would allocate again on the render thread.
    mutating func reset() {
        pendingCount = 0
        historyCount = 0
        sampleTime = 0
    }

    /// Gives `frames` frames of input `element` at `rate` through `planar` (`channels`
    /// pointers). At rate 1 before the stage engages, the pointers are set to the pulled
    /// buffer's channels (read in place: the caller copies before filtering in place);
    /// otherwise the resampled frames are written where the pointers point (buffers of at
    /// least `frames`). `interleaved` is scratch for 2 × maximumFrames frames.
    mutating func produce(
        _ context: RenderContext, element: Int, rate: Float, frames: Int,
        into planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, interleaved: UnsafeMutablePointer<Float>
    ) -> AudioError.Code {
        if !engaged && rate == 1 {
            if let lender, context.isPulledThroughCallback(element, context: lender.context),
                let lent = lender.function(lender.context, frames)
            {
                // Read where the input holds them: no copy into the input's buffer.
                sampleTime += Double(frames)
                planar[0] = UnsafeMutablePointer(mutating: lent)
                rememberMono(lent, frames: frames)
                return .noError
            }
            let (list, status) = context.pullInput(element, frameCount: frames, sampleTime: sampleTime)
            if status != .noError { return status }
            sampleTime += Double(frames)
            // No copy: a copy per input and slice was a tenth of a panned input's mix.
            for channel in 0..<channels { planar[channel] = list.samples(min(channel, list.channelCount - 1)) }
            remember(list, frames: frames)
            return .noError
        }
        if !engaged { engage(then: Double(rate)) } else if discard == 0 { setRatio(Double(rate)) } else { target = Double(rate) }
        var produced = 0
        // Calls that gave nothing: libsoxr hands a long slice's output out over several calls
        // while holding the input it took, so a call that gives something is asked again with
        // no new input; only one that gives nothing gets 8 frames more (and the look-ahead grows).
        var stalls = 0
        while produced < frames {
            // Input up to the last output's position plus the filter's look-ahead, less what waits.
            let wanted = Int((position + Double(frames - produced + discard) * ratio).rounded(.up)) + lookahead - fed - pendingCount
            let pull = min(max(wanted, stalls > 0 ? 8 : 0), capacity - pendingCount, context.maximumFrames)
            if pull > 0 {
                let (list, status) = context.pullInput(element, frameCount: pull, sampleTime: sampleTime)
                if status != .noError { return status }
                sampleTime += Double(pull)
                interleave(list, frames: pull, into: pending + pendingCount * channels)
                pendingCount += pull
            }
            let room = frames - produced
            let (consumed, made) = resampler._withUnsafeGuaranteedRef {
                $0.process(pending, frames: pendingCount, into: interleaved, capacity: room)
            }
            if consumed > 0 {
                pendingCount -= consumed
                if pendingCount > 0 { pending.update(from: pending + consumed * channels, count: pendingCount * channels) }
                fed += consumed
            }
            take(interleaved, made: made, into: planar, at: &produced, rate: rate)
            if made > 0 {
                stalls = 0
            } else if produced < frames {
                stalls += 1
                lookahead += 8
                if stalls > 64 {
                    // The resampler gives nothing: silence rather than a hang.
                    for channel in 0..<channels { (planar[channel] + produced).update(repeating: 0, count: frames - produced) }
                    return .noError
                }
            }
        }
        return .noError
    }

    /// Appends `made` resampled frames (dropping what the priming still owes) as planar samples.
    private mutating func take(
        _ interleaved: UnsafeMutablePointer<Float>, made: Int, into planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        at produced: inout Int, rate: Float
    ) {
        let dropped = min(made, discard)
        discard -= dropped
        position += Double(dropped) * ratio
        if dropped > 0 && discard == 0 { setRatio(target) }
        let kept = made - dropped
        guard kept > 0 else { return }
        for channel in 0..<channels {
            let destination = planar[channel] + produced
            var index = dropped * channels + channel
            for frame in 0..<kept {
                destination[frame] = interleaved[index]
                index += channels
            }
        }
        position += Double(kept) * ratio
        produced += kept
    }

    private mutating func setRatio(_ value: Double) {
        let clamped = min(max(value, 0.5), 2)
        guard clamped != ratio else { return }
        // In range by construction, so setRatio cannot fail (its error would allocate a message).
        let applied = resampler._withUnsafeGuaranteedRef { resampler -> Bool in
            do throws(AudioError) {
                try resampler.setRatio(clamped)
                return true
            } catch {
                return false
            }
        }
        if applied { ratio = clamped }
    }

    private mutating func engage(then rate: Double) {
        engaged = true
        // The resampler's first outputs are what it held (and its lag): they come before the history.
        position = -Double(primingDelay)
        fed = 0
        ratio = 1
        // Priming: the history goes in first at ratio 1; its outputs are dropped.
        if historyCount > 0 {
            pending.update(from: history, count: historyCount * channels)
            pendingCount = historyCount
        }
        discard = historyCount + primingDelay
        target = rate
        if discard == 0 { setRatio(rate) }
        historyCount = 0
    }

    private mutating func remember(_ list: AudioBufferList, frames: Int) {
        if channels == 1 {
            // Mono (most inputs): one contiguous copy rather than the strided loop.
            rememberMono(list.samples(0), frames: frames)
            return
        }
        let keep = min(frames, Self.historyFrames)
        let shift = min(historyCount, Self.historyFrames - keep)
        if shift > 0 && shift < historyCount {
            history.update(from: history + (historyCount - shift) * channels, count: shift * channels)
        }
        let start = frames - keep
        for channel in 0..<channels {
            let source = list.samples(min(channel, list.channelCount - 1))
            var index = shift * channels + channel
            for frame in 0..<keep {
                history[index] = source[start + frame]
                index += channels
            }
        }
        historyCount = shift + keep
    }

    /// `remember` of a mono input's `frames` samples: one contiguous copy of the last ones.
    private mutating func rememberMono(_ samples: UnsafePointer<Float>, frames: Int) {
        let keep = min(frames, Self.historyFrames)
        let shift = min(historyCount, Self.historyFrames - keep)
        if shift > 0 && shift < historyCount {
            history.update(from: history + (historyCount - shift), count: shift)
        }
        (history + shift).update(from: samples + (frames - keep), count: keep)
        historyCount = shift + keep
    }

    private func interleave(_ list: AudioBufferList, frames: Int, into destination: UnsafeMutablePointer<Float>) {
        for channel in 0..<channels {
            let source = list.samples(min(channel, list.channelCount - 1))
            var index = channel
            for frame in 0..<frames {
                destination[index] = source[frame]
                index += channels
            }
        }
    }
}
