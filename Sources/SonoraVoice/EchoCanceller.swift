#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraDSP

/// A streaming, causal acoustic echo canceller for one microphone and one loudspeaker
/// reference, at 8–96 kHz, on frames of any size up to `maximumFramesPerCall`, with a
/// fixed latency of `latencyFrames` (two blocks: 16 ms at 16 kHz, 10.7 ms at 48 kHz).
///
/// Stages, per block of B frames (the largest power of two ≤ 10 ms):
/// 1. `BulkDelayEstimator` (GCC-PHAT at ~4 kHz) finds the reference → microphone delay
///    (up to `maximumDelay`); the reference is read that much later in whole blocks, a
///    block of margin kept in front of the direct path, so the filter spends its taps on
///    the room. A new delay shifts the learned filter by whole partitions (and makes it
///    uncertain again).
/// 2. Two `PartitionedFilter`s share the reference spectra. The background adapts every
///    block as a partitioned frequency-domain Kalman filter: each coefficient's step is its
///    uncertainty over (expected residual echo + Ψ), Ψ being the error's share that is not
///    coherent with the reference (a near-end talker, noise) — so it learns fast at the
///    start and after a path change and stands still in double talk, without a double-talk
///    detector. Its prior is flat until the delay is found, then a room's decaying envelope
///    holding 8× the echo path gain measured at the lock.
///    The foreground, whose output is used, takes the background's coefficients only when
///    the background is clearly better and the far end dominates (or the foreground no
///    longer cancels at all); a diverged background is put back. A foreground that makes the
///    microphone *louder* (a talker cannot: the error is then the talker, less than talker +
///    echo) means the echo path changed: both filters start over from the prior and, until
///    the new one cancels (at most 2 s), the suppressor takes whatever the far end can
///    explain as echo.
/// 3. `ResidualEchoSuppressor` removes the residual echo (from the filter's leak, its own
///    expected misadjustment and a broadband distortion term), and optionally noise. The
///    far end counts as active while the reference *as it reaches the filter* (after the
///    bulk delay) played within a room's decay; the suppressor learns only while it plays.
/// 4. `DriftTracker` fits the slope of the delay estimator's sub-sample peak and reads the
///    reference through a windowed-sinc fractional delay that follows it (clock drift).
///
/// `process` is realtime-safe: no allocation, no locks, no Foundation. Everything is
/// sized in `init`.
public final class EchoCanceller: @unchecked Sendable {
    public let configuration: EchoCancellerConfiguration
    public let blockFrames: Int
    public let partitionCount: Int
    public var latencyFrames: Int { configuration.latencyFrames }

    private let fft: RealFFT
    private let estimator: BulkDelayEstimator
    private let reference: ReferenceSpectra
    private let foreground: PartitionedFilter
    private let background: PartitionedFilter
    private let suppressor: ResidualEchoSuppressor
    private let drift: DriftTracker
    /// The background's error against the reference at the direct path: echo it still misses.
    private let errorReferenceCoherence: SpectralCoherence
    /// Where the direct path sits in the filter, samples (from the delay estimator).
    private var directPathPosition = 0
    private let errorPowerBG: FloatStorage
    /// Near-end-plus-noise power in the background's error per bin (the Kalman update's Ψ).
    private let nearPower: FloatStorage
    /// What the suppressor is told the filter will miss, per bin.
    private let expectedResidual: FloatStorage
    /// The echo the background's envelope makes plausible, per bin.
    private let plausibleEcho: FloatStorage

    // Input/output FIFOs (linear, compacted per block).
    private let micFIFO: FloatStorage
    private let refFIFO: FloatStorage
    private var inputCount = 0
    private let outFIFO: FloatStorage
    private var outputCount: Int

    // Reference history at full rate: ring of power-of-two size.
    private let refRing: FloatStorage
    private let ringMask: Int
    private var ringWritten = 0  // absolute count of samples written
    private var appliedDelay = 0 // frames, multiple of B

    // Scratch.
    private let frame: FloatStorage          // 2B
    private let scratch: FloatStorage        // 4B + 4
    private let yReal: FloatStorage, yImaginary: FloatStorage
    private let eReal: FloatStorage, eImaginary: FloatStorage
    private let interpolator: FloatStorage
    private let echoForeground: FloatStorage // B
    private let errorForeground: FloatStorage
    private let errorBackground: FloatStorage
    private let blockOutput: FloatStorage

    private var smoothedForeground: Float = 0
    private var smoothedBackground: Float = 0
    private var smoothedMic: Float = 0
    private var betterCount = 0
    private var worseCount = 0
    private var pathChanges = 0
    /// The filter has cancelled deeply (≥ 20 dB, slowly averaged) since the last path change.
    private var convergedSinceChange = true
    /// Blocks left during which the suppressor takes everything the far end can explain as echo.
    private var pathChangeHold = 0
    private var recoveredCount = 0
    /// The old echo path's gain, and the echo it makes plausible per bin, while the hold lasts.
    private var heldEchoGain: Float = 0
    private let heldEcho: FloatStorage
    /// Blocks left of the onset hold (a sudden loss of cancellation, ~0.1 s).
    private var onsetBlocks = 0
    private let onsetHoldBlocks: Int
    /// Foreground error and microphone power, slowly smoothed (~0.4 s): how deeply the filter cancels.
    private var slowForeground: Float = 0
    private var slowMic: Float = 0
    private let onsetConvergedRatio: Float = 100
    /// A block's error over microphone power above which cancellation is suddenly lost (3 dB).
    private let onsetRatio: Float = 0.5
    /// At most 2 s: should the new filter not converge, ordinary suppression takes over.
    private let pathChangeHoldBlocks: Int
    /// Microphone over foreground error power (10 dB) at which the new filter cancels again.
    private let recoveredRatio: Float = 10
    /// Foreground error over microphone power (smoothed) above which the echo path has changed.
    private let pathChangeRatio: Float = 1.4
    /// Foreground error and microphone power, smoothed for the path-change test.
    private var changeForeground: Float = 0
    private var changeMic: Float = 0
    private let changeRate: Float
    /// Blocks in a row the test must hold (a single block can be a talker's chance phase).
    private let changeCount: Int
    /// Reference energy per block as it reaches the filter, held and decaying like the
    /// prior's room (−60 dB per `priorRT60`): while it is above `activityThreshold` the
    /// microphone may hold echo.
    private var echoEnvelope: Float = 0
    private let activityThreshold: Float
    private var erleMic: Float = 0
    private var erleOut: Float = 0
    private var blockCount = 0
    /// Coherence of microphone and foreground echo estimate above which the far end
    /// dominates and the background may hand over its coefficients.
    private let copyCoherence: Float = 0.85
    private let divergenceRatio: Float = 4
    /// Smoothing of the error/reference cross-spectrum behind the echo share of the error.
    private let coherenceRate: Float
    /// Coherence an uncorrelated pair still shows after that smoothing (estimation bias).
    private let coherenceBias: Float = 0.1
    /// Kalman state transition A (per block): how fast the filter is assumed to drift, which
    /// keeps every coefficient from becoming certain and the filter from freezing.
    /// 0.9995 per 8 ms (a 16 kHz block), the same drift per second at every rate.
    private let transition: Float
    /// The echo path's prior: this much energy in all, decaying like a room of `priorRT60`
    /// seconds. Until the delay is found 2 (+3 dB: louder at the microphone than it plays);
    /// at each delay lock `priorGainMargin` × the echo path's gain measured then (the power
    /// of the microphone over the reference's, aligned by the delay), within 0.1…16.
    private var priorEnergy = EchoCanceller.initialPriorEnergy
    private static let initialPriorEnergy: Float = 2
    /// The prior spreads the energy over a 0.5 s envelope while a room puts most of it into
    /// the direct path and the first reflections: those partitions need several times their
    /// share to learn at once (measured: 8× beats 4× and 16× over ERLs of −6…18 dB).
    private let priorGainMargin: Float = 8
    /// Per-block energies of the microphone and the reference as they arrive (rings), for
    /// measuring the echo path's gain when a delay is found.
    private let micBlockEnergy: FloatStorage
    private let refBlockEnergy: FloatStorage
    private let priorRT60 = 0.5
    /// The prior's decay per partition, and whether it has been applied (at the first delay lock).
    private let priorDecay: Float
    private var priorShaped = false
    /// Share of partitions whose gradient constraint is applied each block.
    private let constrainedShare = 0.25

    // Switches, applied between blocks.
    /// Read every block and written by the voice units every render cycle: being public, the
    /// optimizer cannot prove its accesses never overlap, so without the attribute each one
    /// pays a dynamic exclusivity check (a plain Bool, never accessed inout).
    @exclusivity(unchecked) public var isBypassed = false
    public var suppressionStrength: Float {
        get { suppressor.strength }
        set { suppressor.strength = max(0, min(1, newValue.isFinite ? newValue : 0.5)) }
    }
    public var noiseSuppression: Bool {
        get { suppressor.noiseSuppression }
        set { suppressor.noiseSuppression = newValue }
    }
    public var automaticGainControl: Bool {
        get { suppressor.automaticGainControl }
        set { suppressor.automaticGainControl = newValue }
    }
    public var comfortNoise: Bool {
        get { suppressor.comfortNoise }
        set { suppressor.comfortNoise = newValue }
    }

    public init(configuration: EchoCancellerConfiguration) throws(AudioError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        let b = configuration.blockFrames
        blockFrames = b
        partitionCount = max(1, Int((configuration.filterLength * configuration.sampleRate / Double(b)).rounded(.up)))
        let k = b + 1
        fft = RealFFT(size: 2 * b)
        estimator = BulkDelayEstimator(sampleRate: configuration.sampleRate, maximumDelay: configuration.maximumDelay)
        reference = ReferenceSpectra(binCount: k, partitionCount: partitionCount)
        foreground = PartitionedFilter(blockFrames: b, partitionCount: partitionCount)
        background = PartitionedFilter(blockFrames: b, partitionCount: partitionCount)
        pathChangeHoldBlocks = Int(2 * configuration.sampleRate) / b
        onsetHoldBlocks = max(1, Int(0.1 * configuration.sampleRate) / b)
        // Time constant ~25 ms and ≥ 16 ms in a row, whatever the block size.
        let blockSeconds = Double(b) / configuration.sampleRate
        transition = Float(pow(0.9995, blockSeconds / 0.008))
        coherenceRate = Float(1 - pow(0.85, blockSeconds / 0.008))
        changeRate = Float(1 - exp(-blockSeconds / 0.025))
        changeCount = max(2, Int((0.016 / blockSeconds).rounded(.up)))
        // Energy falls 60 dB per RT60: per partition of B frames, 10^(−6·B/(fs·RT60)).
        priorDecay = powf(10, Float(-6 * Double(b) / (configuration.sampleRate * priorRT60)))
        activityThreshold = Float(b) * 1e-8
        // Until the delay is found the direct path may sit anywhere in the filter: flat prior.
        background.setPrior(energy: priorEnergy, decay: 1)
        suppressor = ResidualEchoSuppressor(blockFrames: b, sampleRate: configuration.sampleRate)
        errorReferenceCoherence = SpectralCoherence(binCount: k, crossRate: coherenceRate, powerRate: coherenceRate)
        errorPowerBG = FloatStorage(count: k)
        nearPower = FloatStorage(count: k)
        expectedResidual = FloatStorage(count: k)
        plausibleEcho = FloatStorage(count: k)
        heldEcho = FloatStorage(count: k)
        let energyBlocks = Int((configuration.maximumDelay + 1) * configuration.sampleRate) / b + 2
        micBlockEnergy = FloatStorage(count: energyBlocks)
        refBlockEnergy = FloatStorage(count: energyBlocks)
        drift = DriftTracker(blockFrames: b, sampleRate: configuration.sampleRate, enabled: configuration.driftCompensation)
        let fifo = configuration.maximumFramesPerCall + 2 * b
        micFIFO = FloatStorage(count: fifo)
        refFIFO = FloatStorage(count: fifo)
        outFIFO = FloatStorage(count: fifo + 2 * b)
        outputCount = b
        var ring = 1
        let history = Int(configuration.maximumDelay * configuration.sampleRate) + (partitionCount + 4) * b + DriftTracker.maximumOffset + 8
        while ring < history { ring *= 2 }
        refRing = FloatStorage(count: ring)
        ringMask = ring - 1
        frame = FloatStorage(count: 2 * b)
        scratch = FloatStorage(count: 4 * b + 4)
        yReal = FloatStorage(count: k); yImaginary = FloatStorage(count: k)
        eReal = FloatStorage(count: k); eImaginary = FloatStorage(count: k)
        interpolator = FloatStorage(count: 16)
        echoForeground = FloatStorage(count: b)
        errorForeground = FloatStorage(count: b)
        errorBackground = FloatStorage(count: b)
        blockOutput = FloatStorage(count: b)
        suppressor.strength = configuration.suppressionStrength
        suppressor.noiseSuppression = configuration.noiseSuppression
        suppressor.automaticGainControl = configuration.automaticGainControl
        suppressor.comfortNoise = configuration.comfortNoise
    }

    /// Convenience: a canceller at `sampleRate` with the default settings.
    public convenience init(sampleRate: Double) throws(AudioError) {
        try self.init(configuration: EchoCancellerConfiguration(sampleRate: sampleRate))
    }

    deinit {
        errorPowerBG.free(); micBlockEnergy.free(); refBlockEnergy.free(); nearPower.free(); expectedResidual.free(); plausibleEcho.free(); heldEcho.free()
        errorReferenceCoherence.free(); interpolator.free()
        estimator.free(); reference.free(); foreground.free(); background.free(); suppressor.free()
        for storage in [micFIFO, refFIFO, outFIFO, refRing, frame, scratch, yReal, yImaginary, eReal, eImaginary,
                        echoForeground, errorForeground, errorBackground, blockOutput] { storage.free() }
    }

    /// Forgets everything learned (filters, delay, noise, drift); the latency stays.
    public func reset() {
        estimator.reset(); reference.reset(); foreground.reset(); background.reset(); suppressor.reset(); drift.reset()
        nearPower.clear(); errorPowerBG.clear()
        priorEnergy = Self.initialPriorEnergy; micBlockEnergy.clear(); refBlockEnergy.clear()
        background.setPrior(energy: priorEnergy, decay: 1); priorShaped = false
        errorReferenceCoherence.reset(); directPathPosition = 0
        micFIFO.clear(); refFIFO.clear(); outFIFO.clear(); refRing.clear()
        inputCount = 0; outputCount = blockFrames; ringWritten = 0; appliedDelay = 0
        smoothedForeground = 0; smoothedBackground = 0; betterCount = 0; changeForeground = 0; changeMic = 0; worseCount = 0; pathChanges = 0; convergedSinceChange = true; pathChangeHold = 0; recoveredCount = 0; onsetBlocks = 0; slowForeground = 0; slowMic = 0; heldEchoGain = 0
        erleMic = 0; erleOut = 0; blockCount = 0; echoEnvelope = 0
    }

    /// The latest metrics (cheap; read it between `process` calls).
    public var metrics: EchoCancellerMetrics {
        EchoCancellerMetrics(
            estimatedDelay: estimator.delay.map { Double($0) / configuration.sampleRate },
            erle: erleOut > 0 && erleMic > 0 ? Double(10 * log10f(erleMic / erleOut)) : 0,
            isDoubleTalk: suppressor.isDoubleTalk,
            driftPPM: drift.ppm,
            leak: Double(suppressor.leak),
            blocks: blockCount,
            echoPathChanges: pathChanges)
    }

    /// Cancels the echo of `reference` in `microphone` (`frames` samples each) into
    /// `output`. `reference[n]` is what the loudspeaker played when `microphone[n]` was
    /// captured; output is delayed by `latencyFrames`. `output` may alias `microphone`.
    /// Returns false (output silent) when `frames` exceeds `maximumFramesPerCall`.
    @discardableResult
    public func process(microphone: UnsafePointer<Float>, reference refInput: UnsafePointer<Float>,
                        output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        guard frames >= 0, frames <= configuration.maximumFramesPerCall else {
            if frames > 0 { output.update(repeating: 0, count: frames) }
            return false
        }
        let b = blockFrames
        (micFIFO.pointer + inputCount).update(from: microphone, count: frames)
        (refFIFO.pointer + inputCount).update(from: refInput, count: frames)
        inputCount += frames
        var consumed = 0
        while inputCount - consumed >= b {
            processBlock(mic: micFIFO.pointer + consumed, ref: refFIFO.pointer + consumed)
            (outFIFO.pointer + outputCount).update(from: blockOutput.pointer, count: b)
            outputCount += b
            consumed += b
        }
        if consumed > 0 {
            let left = inputCount - consumed
            micFIFO.pointer.update(from: micFIFO.pointer + consumed, count: left)
            refFIFO.pointer.update(from: refFIFO.pointer + consumed, count: left)
            inputCount = left
        }
        // Always enough: the FIFO starts with one block of silence (the declared latency).
        output.update(from: outFIFO.pointer, count: frames)
        outputCount -= frames
        outFIFO.pointer.update(from: outFIFO.pointer + frames, count: outputCount)
        return true
    }

    // MARK: One block

    private func processBlock(mic: UnsafeMutablePointer<Float>, ref: UnsafeMutablePointer<Float>) {
        let b = blockFrames, k = b + 1
        blockCount += 1
        estimator.push(reference: ref, microphone: mic, count: b)
        var micBlock: Float = 0, refBlock: Float = 0
        for n in 0..<b {
            refRing[(ringWritten + n) & ringMask] = ref[n]
            micBlock += mic[n] * mic[n]
            refBlock += ref[n] * ref[n]
        }
        ringWritten += b
        micBlockEnergy[blockCount % micBlockEnergy.count] = micBlock
        refBlockEnergy[blockCount % refBlockEnergy.count] = refBlock

        if isBypassed {
            suppressor.process(error: mic, echo: scratch.pointer, mic: mic, expectedResidual: nil, uncertainEcho: nil, farEndActive: false, farEndPlaying: false,
                               bypassSuppression: true, output: blockOutput.pointer)
            return
        }

        // Re-align to a new bulk delay in whole blocks, keeping the learned response.
        if let found = estimator.delay {
            if !priorShaped {
                // The direct path is found: from now on the room's decaying envelope, as loud
                // as the echo path measures.
                measurePriorEnergy(delay: found)
                background.setPrior(energy: priorEnergy, decay: priorDecay)
                priorShaped = true
            }
            // Where the direct path would land in the filter, after the drift offset; keep it
            // within [B/4, 3B) (a block of margin in front of it), else move by whole blocks.
            let position = found - Int(drift.offset.rounded()) - appliedDelay
            directPathPosition = max(0, position)
            if position < b / 4 || position >= 3 * b {
                let wanted = max(0, (found - Int(drift.offset.rounded()) - b) / b) * b
                if wanted != appliedDelay {
                    let shift = (wanted - appliedDelay) / b
                    foreground.shift(byBlocks: shift)
                    background.shift(byBlocks: shift)
                    measurePriorEnergy(delay: found)
                    background.setPrior(energy: priorEnergy, decay: priorDecay)
                    appliedDelay = wanted
                    directPathPosition = max(0, found - Int(drift.offset.rounded()) - appliedDelay)
                    rebuildReferenceSpectra()
                }
            }
        }
        // The reference frame [previous block, this block] seen through the delay.
        readDelayed(blocksBack: 0, into: frame.pointer)
        // Far-end activity is judged where the echo is: on the reference as it reaches the
        // filter (after the bulk delay), and for as long as a room's echo of it lasts. The
        // reference as it arrives would call a 120 ms delay's echo of the last word "far end
        // silent" and stop suppressing it.
        var delayedEnergy: Float = 0
        for n in b..<(2 * b) { delayedEnergy += frame[n] * frame[n] }
        echoEnvelope = max(delayedEnergy, echoEnvelope * priorDecay)
        let farEndPlaying = delayedEnergy > activityThreshold
        let newest = reference.push()
        fft.forward(frame.pointer, real: newest.real, imaginary: newest.imaginary)

        // Foreground: the canceller's output.
        foreground.filter(reference, outReal: yReal.pointer, outImaginary: yImaginary.pointer)
        fft.inverse(real: yReal.pointer, imaginary: yImaginary.pointer, output: scratch.pointer)
        var energyForeground: Float = 0
        for n in 0..<b {
            echoForeground[n] = scratch[b + n]
            errorForeground[n] = mic[n] - scratch[b + n]
            energyForeground += errorForeground[n] * errorForeground[n]
        }
        // Background: adapts every block.
        background.filter(reference, outReal: yReal.pointer, outImaginary: yImaginary.pointer)
        fft.inverse(real: yReal.pointer, imaginary: yImaginary.pointer, output: scratch.pointer)
        var energyBackground: Float = 0
        var micEnergy: Float = 0
        for n in 0..<b {
            errorBackground[n] = mic[n] - scratch[b + n]
            energyBackground += errorBackground[n] * errorBackground[n]
            micEnergy += mic[n] * mic[n]
        }
        let farEndActive = echoEnvelope > activityThreshold
        // The background's error spectrum: its gradient, and its coherence with the reference.
        frame.pointer.update(repeating: 0, count: b)
        (frame.pointer + b).update(from: errorBackground.pointer, count: b)
        fft.forward(frame.pointer, real: eReal.pointer, imaginary: eImaginary.pointer)
        for bin in 0..<k { errorPowerBG[bin] = eReal[bin] * eReal[bin] + eImaginary[bin] * eImaginary[bin] }
        background.updateResidualPower(reference)
        if farEndActive { adaptBackground(blockFrames: b) }
        // Two-path control.
        smoothedForeground += 0.3 * (energyForeground - smoothedForeground)
        smoothedMic += 0.3 * (micEnergy - smoothedMic)
        smoothedBackground += 0.3 * (energyBackground - smoothedBackground)
        if farEndActive && (suppressor.coherence > copyCoherence || smoothedForeground > 0.5 * smoothedMic) && smoothedBackground < 0.8 * smoothedForeground && energyBackground < energyForeground {
            betterCount += 1
            if betterCount >= 2 {
                foreground.copy(from: background)
                betterCount = 0
            }
        } else {
            betterCount = 0
            if smoothedBackground > divergenceRatio * smoothedForeground && smoothedForeground < micEnergy * 2 + 1e-9 {
                background.copy(from: foreground)
                smoothedBackground = smoothedForeground
            }
        }
        // A filter that makes the microphone louder than it is no longer describes the room
        // (a near-end talker cannot do that: the error is then the talker, less than talker +
        // echo). Start over from the prior at once instead of waiting for its variances to grow.
        changeForeground += changeRate * (energyForeground - changeForeground)
        changeMic += changeRate * (micEnergy - changeMic)
        if farEndPlaying && changeForeground > pathChangeRatio * changeMic && changeMic > activityThreshold {
            worseCount += 1
            if worseCount >= changeCount {
                // What the old path gave is the best guess of what the new one gives, wherever
                // its delay now is (the filter may shift away from it or start from nothing). A
                // second detection during the hold finds the filters just reset: keep the gain.
                let gain = max(foreground.echoPathGain(), background.echoPathGain())
                heldEchoGain = pathChangeHold > 0 ? max(heldEchoGain, gain) : gain
                foreground.reset()
                background.restorePrior()
                suppressor.echoPathChanged()
                smoothedForeground = smoothedMic
                changeForeground = changeMic
                worseCount = 0
                // Re-detections while the new path is still being learned are the same change.
                if pathChangeHold == 0 && convergedSinceChange { pathChanges += 1 }
                convergedSinceChange = false
                pathChangeHold = pathChangeHoldBlocks
                recoveredCount = 0
            }
        } else {
            worseCount = 0
        }
        // A sudden loss of cancellation in a filter that was cancelling deeply (≥ 20 dB): a new
        // echo path or a talker's first syllable, not yet told apart. For a moment (until the
        // test above can decide), what the far end can explain is taken as echo; a talker
        // louder than that still passes.
        if farEndActive && micEnergy > 10 * suppressor.noiseEnergy {
            if slowMic > onsetConvergedRatio * slowForeground && energyForeground > onsetRatio * micEnergy {
                onsetBlocks = onsetHoldBlocks
            }
            slowForeground += 0.02 * (energyForeground - slowForeground)
            slowMic += 0.02 * (micEnergy - slowMic)
            if slowMic > onsetConvergedRatio * slowForeground { convergedSinceChange = true }
        }
        drift.advance(estimator)

        // The filter's expected misadjustment, but never more than the echo its envelope makes
        // plausible (in bins the far end has hardly excited the variance is still the prior).
        background.plausibleEcho(reference, into: plausibleEcho.pointer)
        let residualPower = background.residualPower.pointer
        for bin in 0..<k { expectedResidual[bin] = min(residualPower[bin], plausibleEcho[bin]) }
        let onset = onsetBlocks > 0 && pathChangeHold == 0
        if onsetBlocks > 0 { onsetBlocks -= 1 }
        if pathChangeHold > 0 {
            reference.peakPower(into: heldEcho.pointer)
            for bin in 0..<k { heldEcho[bin] = max(plausibleEcho[bin], heldEchoGain * heldEcho[bin]) }
            pathChangeHold -= 1
            // Over once the new filter cancels again.
            recoveredCount = smoothedMic > recoveredRatio * smoothedForeground ? recoveredCount + 1 : 0
            if recoveredCount >= 4 { pathChangeHold = 0 }
        }
        suppressor.process(error: errorForeground.pointer, echo: echoForeground.pointer, mic: mic,
                           expectedResidual: expectedResidual.pointer,
                           uncertainEcho: pathChangeHold > 0 ? heldEcho.pointer : onset ? plausibleEcho.pointer : nil,
                           farEndActive: farEndActive, farEndPlaying: farEndPlaying,
                           bypassSuppression: false, output: blockOutput.pointer)
        if suppressor.isFarEndOnly {
            erleMic += 0.02 * (suppressor.micEnergy - erleMic)
            erleOut += 0.02 * (suppressor.outputEnergy - erleOut)
        }
    }

    /// Sets `priorEnergy` from the echo path's gain: microphone energy over the reference's
    /// `delay` earlier, over the last second (or what there is of it). The microphone also
    /// holds noise and perhaps a talker, so this errs loud, which a prior may.
    private func measurePriorEnergy(delay: Int) {
        let count = micBlockEnergy.count
        let lag = (delay + blockFrames / 2) / blockFrames
        let span = min(blockCount - lag, count - lag - 1, Int(configuration.sampleRate) / blockFrames)
        guard span > 0 else { return }
        var micSum: Float = 0, refSum: Float = 0
        for age in 0..<span {
            micSum += micBlockEnergy[(blockCount - age) % count]
            refSum += refBlockEnergy[(blockCount - age - lag) % count]
        }
        guard refSum > Float(span) * activityThreshold else { return }
        priorEnergy = max(0.1, min(16, priorGainMargin * micSum / refSum))
    }

    /// One partitioned frequency-domain Kalman step of the background filter on the error
    /// spectrum in `eReal/eImaginary` (power in `errorPowerBG`).
    ///
    /// Ψ, the part of the error no filter can remove (near-end talker, noise), is taken as the
    /// error's share that is *not* coherent with the reference at the direct path: echo the
    /// filter misses follows the far end, a talker does not. So the step is large at the start
    /// and after a path change and small in double talk, without a double-talk detector. Where
    /// the coherent (missed) echo exceeds what the filter's variances expect, they are inflated
    /// (at most ×2 per block): the filter becomes unsure again and re-learns.
    private func adaptBackground(blockFrames b: Int) {
        let k = b + 1
        let direct = max(0, min(partitionCount - 1, directPathPosition / b))
        errorReferenceCoherence.update(aReal: eReal.pointer, aImaginary: eImaginary.pointer,
                                       bReal: reference.real(direct), bImaginary: reference.imaginary(direct))
        let errorPowerSmoothed = errorReferenceCoherence.powerA
        let residual = background.residualPower.pointer
        for bin in 0..<k {
            let coherence = errorReferenceCoherence.coherence(at: bin)
            let echoShare = max(0, (coherence - coherenceBias) / (1 - coherenceBias))
            nearPower[bin] = (1 - echoShare) * errorPowerBG[bin]
            let missed = echoShare * errorPowerSmoothed[bin]
            if missed > residual[bin] {
                let factor = min(2, missed / (residual[bin] + 1e-20))
                background.inflateVariance(bin: bin, factor: factor)
                residual[bin] *= factor
            }
        }
        let regularization = Float(partitionCount) * Float(2 * b) * 1e-8 * priorEnergy
        background.adaptKalman(reference, errorReal: eReal.pointer, errorImaginary: eImaginary.pointer,
                               noisePower: nearPower.pointer, transition: transition, regularization: regularization,
                               constrainCount: max(1, Int(Double(partitionCount) * constrainedShare)), fft: fft, scratch: scratch.pointer)
    }

    /// The 2B-sample reference frame ending `blocksBack` blocks before the current block's
    /// end, seen through the applied bulk delay and the drift offset.
    private func readDelayed(blocksBack: Int, into destination: UnsafeMutablePointer<Float>) {
        let b = blockFrames
        let end = ringWritten - appliedDelay - blocksBack * b
        let offset = drift.offset
        if offset == 0 {
            for n in 0..<(2 * b) {
                let index = end - 2 * b + n
                destination[n] = index >= 0 ? refRing[index & ringMask] : 0
            }
        } else {
            // Fractional read: a 16-tap Hann-windowed sinc for the offset's fraction (flat
            // to ~0.4 fs, where a cubic would already smear the high band the filter models).
            let whole = Int(offset.rounded(.down))
            let fraction = offset - Double(whole)
            var sum = 0.0
            for j in 0..<16 {
                let x = Double(j - 7) - fraction
                let sinc = abs(x) < 1e-9 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                let window = 0.5 + 0.5 * cos(Double.pi * x / 8.5)
                interpolator[j] = Float(sinc * window)
                sum += sinc * window
            }
            for j in 0..<16 { interpolator[j] = Float(Double(interpolator[j]) / sum) }
            for n in 0..<(2 * b) {
                let index = end - 2 * b + n - whole
                var value: Float = 0
                for j in 0..<16 { value += interpolator[j] * sample(index - (j - 7)) }
                destination[n] = value
            }
        }
    }

    @inline(__always) private func sample(_ index: Int) -> Float {
        index >= 0 && index < ringWritten ? refRing[index & ringMask] : 0
    }

    private func rebuildReferenceSpectra() {
        for age in stride(from: partitionCount, through: 1, by: -1) {
            readDelayed(blocksBack: age, into: frame.pointer)
            let slot = reference.push()
            fft.forward(frame.pointer, real: slot.real, imaginary: slot.imaginary)
        }
    }
}
