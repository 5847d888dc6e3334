#if canImport(Glibc)
import Glibc
#endif
import SonoraDSP

/// Removes what the linear filter leaves: a per-bin gain on a weighted overlap-add
/// (sqrt-Hann, 50 % overlap, hop = one block) analysis of the linear filter's output.
///
/// The residual echo in a bin is estimated from three parts, each from a different
/// source, so none has to be right alone:
/// - the **leak**: per band, how strongly the error's power fluctuations follow the echo
///   estimate's (Valin's estimator: the correlation of |E|² and |Ŷ|² around their slow
///   means over the variance of |Ŷ|²), times |Ŷ|². Near-end speech and noise do not
///   follow the far end, so they do not raise it;
/// - the **model**: the adaptive filter's own expected misadjustment, Σ_m P_m·|X_m|² (its
///   Kalman state-error variance seen through the reference) — large while the filter is
///   unsure (start, tails, a new delay), small once it has converged, and not fooled by a
///   talker; the canceller caps it at the echo its envelope makes plausible (bins the far
///   end has hardly excited keep the prior's variance, and a talker there is no echo), and
///   it is calibrated per band against the error the filter actually leaves;
/// - a **broadband** part: per band, the share of the error that follows the *total* echo
///   level (a loudspeaker's distortion puts echo into bands the echo estimate leaves empty).
///
/// Where the error stays coherent with the echo estimate (per band, slowly smoothed), that
/// share of it is taken as echo outright: a new echo path, or a burst the filter mispredicts,
/// while a near-end talker holding the error is not coherent with it.
///
/// The leaks learn only while the error stays near what the suppressor expects (residual +
/// noise); an error far above it is a talker, and learning then would teach the suppressor
/// to remove them. The gain is a spectral subtraction (over-subtraction and floor set by the
/// strength); a stationary noise estimate (minimum tracking with slow rise) gives optional
/// noise suppression and comfort noise; an optional AGC follows the near-end talker's level.
final class ResidualEchoSuppressor {
    let blockFrames: Int
    let binCount: Int
    let sampleRate: Double
    private let fft: RealFFT
    private let window: FloatStorage            // sqrt-Hann, 2B
    private let frame: FloatStorage             // 2B scratch
    private let errorHistory: FloatStorage      // previous block of e
    private let echoHistory: FloatStorage       // previous block of ŷ
    private let micHistory: FloatStorage
    private let overlap: FloatStorage           // synthesis tail, B
    private let errorReal: FloatStorage, errorImaginary: FloatStorage
    private let echoReal: FloatStorage, echoImaginary: FloatStorage
    private let micReal: FloatStorage, micImaginary: FloatStorage
    private let errorPower: FloatStorage, echoPower: FloatStorage, micPower: FloatStorage
    /// Microphone against echo estimate: the far end dominates where they are coherent.
    private let micEchoCoherence: SpectralCoherence
    private let coherenceLow: Int, coherenceHigh: Int
    /// Echo-estimate-weighted coherence of microphone and echo estimate (0…1): high while
    /// the far end dominates the microphone.
    private(set) var coherence: Float = 0

    // Bands (¼ kHz wide at the bottom, wider above) for the leak estimates.
    private let bandOfBin: UnsafeMutablePointer<Int>
    private let bandWidth: UnsafeMutablePointer<Int>   // bins per band
    private let bandCount: Int
    private let slowError: FloatStorage, slowEcho: FloatStorage
    private var slowEchoTotal: Float = 0
    private var echoTotalNow: Float = 0
    /// What the filter leaves against what it predicts, slowly smoothed (rate 0.05 per block),
    /// averaged per band.
    private let errorEchoCoherence: SpectralCoherence
    private let bandCoherenceSum: FloatStorage, bandCoherenceWeight: FloatStorage
    /// Coherence a converged filter's residual still shows (0.2–0.3 measured); above it the
    /// error is echo the filter mispredicts (0.45–0.6 after a path change), while a near-end
    /// talker holding the error keeps it at 0.05–0.15.
    private let errorEchoBias: Float = 0.25
    private let errorEchoGain: Float = 6
    /// Σ|Ŷ|² this block (smoothed like the spectra): distortion follows the echo as it is
    /// now, so the broadband term vanishes in the far end's pauses.
    private var currentEchoTotal: Float = 0
    /// Per band: how much of the filter's expected misadjustment shows up in its error (0…1).
    private let bandModelScale: FloatStorage, bandModel: FloatStorage, bandExcess: FloatStorage
    private let bandCross: FloatStorage, bandEchoFluctuation: FloatStorage, bandLeak: FloatStorage
    private let bandBroadCross: FloatStorage, bandBroadLeak: FloatStorage
    private var broadEchoFluctuation: Float = 0
    private let bandError: FloatStorage, bandEcho: FloatStorage, bandErrorFluctuation: FloatStorage, bandCrossNow: FloatStorage, bandEchoNow: FloatStorage
    /// Leak learning rate per block, slowed further where the error outweighs the echo estimate.
    private let leakRate: Float
    /// Rate of the slow means the fluctuations are taken around.
    private let slowRate: Float
    /// Rate at which the model's calibration (per band) follows the error it predicts.
    private let modelRate: Float
    /// It rises a little faster than it falls: an underestimate leaks echo, an overestimate
    /// only deepens suppression in single talk (the calibration stands still in double talk).
    private let modelRiseRate: Float
    /// Smoothing of the error, echo-estimate and microphone power spectra.
    private let spectrumRate: Float
    /// Weight of the broadband (distortion) part.
    private let broadbandWeight: Float = 1.25
    /// While the echo path is uncertain, error up to this many times the plausible echo is
    /// taken as echo (a room's response peaks ~10 dB above its mean in a few bins).
    private let uncertainEchoGain: Float = 10
    /// Error over expected residual above which a talker is assumed and leaks stand still.
    private let talkerRatio: Float = 2

    /// Mean leak over the bands (linear filter output over echo estimate), 0 … 2.
    var leak: Float {
        var sum: Float = 0
        for band in 0..<bandCount { sum += bandLeak[band] }
        return sum / Float(bandCount)
    }
    private let noisePower: FloatStorage
    private let residual: FloatStorage
    private let gain: FloatStorage
    private var noiseInitialized = false
    private var random: UInt32 = 0x1234_5678
    // Settings, changed between blocks.
    var strength: Float = 0.5
    var noiseSuppression = true
    var comfortNoise = false
    var automaticGainControl = false
    private var agcGain: Float = 1
    private var previousMicEnergy: Float = 0
    private var nearLevel: Float = 0
    // Per-block results for metrics.
    private(set) var isDoubleTalk = false
    private(set) var isFarEndOnly = false
    private(set) var micEnergy: Float = 0
    private(set) var outputEnergy: Float = 0
    /// The stationary noise's energy in one block of the time signal (from its spectrum).
    private(set) var noiseEnergy: Float = 0

    init(blockFrames: Int, sampleRate: Double) {
        self.blockFrames = blockFrames
        self.sampleRate = sampleRate
        binCount = blockFrames + 1
        fft = RealFFT(size: 2 * blockFrames)
        window = FloatStorage(count: 2 * blockFrames)
        for n in 0..<(2 * blockFrames) {
            window[n] = Float(sin(Double.pi * (Double(n) + 0.5) / Double(2 * blockFrames)))
        }
        frame = FloatStorage(count: 2 * blockFrames)
        errorHistory = FloatStorage(count: blockFrames)
        echoHistory = FloatStorage(count: blockFrames)
        micHistory = FloatStorage(count: blockFrames)
        overlap = FloatStorage(count: blockFrames)
        let k = blockFrames + 1
        errorReal = FloatStorage(count: k); errorImaginary = FloatStorage(count: k)
        echoReal = FloatStorage(count: k); echoImaginary = FloatStorage(count: k)
        micReal = FloatStorage(count: k); micImaginary = FloatStorage(count: k)
        errorPower = FloatStorage(count: k); echoPower = FloatStorage(count: k); micPower = FloatStorage(count: k)
        // Rates are set per 8 ms (a 16 kHz block) and converted, so they mean the same time at every rate.
        let perBlock = { (rate: Float) -> Float in Float(1 - pow(1 - Double(rate), Double(blockFrames) / sampleRate / 0.008)) }
        leakRate = perBlock(0.03); slowRate = perBlock(0.05); modelRate = perBlock(0.03); modelRiseRate = perBlock(0.04)
        spectrumRate = perBlock(0.5)
        micEchoCoherence = SpectralCoherence(binCount: k, crossRate: perBlock(0.3), powerRate: perBlock(0.5))
        coherenceLow = max(1, Int(200 / sampleRate * Double(2 * blockFrames)))
        coherenceHigh = min(k - 1, Int(4000 / sampleRate * Double(2 * blockFrames)))
        noisePower = FloatStorage(count: k)
        residual = FloatStorage(count: k)
        gain = FloatStorage(count: k)
        for bin in 0..<k { gain[bin] = 1 }

        let edges: [Double] = [250, 500, 750, 1000, 1250, 1500, 2000, 2500, 3000, 3500, 4000, 5000, 6000, 7000, 8000, 10000, 12000, 16000, 20000]
        bandOfBin = .allocate(capacity: k)
        var band = 0
        for bin in 0..<k {
            let frequency = Double(bin) * sampleRate / Double(2 * blockFrames)
            while band < edges.count && frequency >= edges[band] { band += 1 }
            bandOfBin[bin] = band
        }
        bandCount = bandOfBin[k - 1] + 1
        bandWidth = .allocate(capacity: bandCount)
        bandWidth.initialize(repeating: 0, count: bandCount)
        for bin in 0..<k { bandWidth[bandOfBin[bin]] += 1 }
        slowError = FloatStorage(count: k); slowEcho = FloatStorage(count: k)
        bandCross = FloatStorage(count: bandCount); bandEchoFluctuation = FloatStorage(count: bandCount)
        bandLeak = FloatStorage(count: bandCount)
        bandBroadCross = FloatStorage(count: bandCount); bandBroadLeak = FloatStorage(count: bandCount)
        bandError = FloatStorage(count: bandCount); bandEcho = FloatStorage(count: bandCount)
        bandErrorFluctuation = FloatStorage(count: bandCount)
        bandCrossNow = FloatStorage(count: bandCount); bandEchoNow = FloatStorage(count: bandCount)
        bandModelScale = FloatStorage(count: bandCount); bandModel = FloatStorage(count: bandCount); bandExcess = FloatStorage(count: bandCount)
        errorEchoCoherence = SpectralCoherence(binCount: k, crossRate: perBlock(0.05), powerRate: perBlock(0.05))
        bandCoherenceSum = FloatStorage(count: bandCount); bandCoherenceWeight = FloatStorage(count: bandCount)
        for band in 0..<bandCount { bandLeak[band] = 1; bandModelScale[band] = 1 }
    }

    private var storages: [FloatStorage] {
        [window, frame, errorHistory, echoHistory, micHistory, overlap, errorReal, errorImaginary, echoReal, echoImaginary,
         micReal, micImaginary, errorPower, echoPower, micPower, noisePower, residual, gain,
         slowError, slowEcho, bandCross, bandEchoFluctuation, bandLeak, bandBroadCross, bandBroadLeak,
         bandError, bandEcho, bandErrorFluctuation, bandCrossNow, bandEchoNow, bandModelScale, bandModel, bandExcess,
         bandCoherenceSum, bandCoherenceWeight]
    }

    func free() {
        for storage in storages { storage.free() }
        micEchoCoherence.free(); errorEchoCoherence.free()
        bandOfBin.deallocate()
        bandWidth.deallocate()
    }

    func reset() {
        for storage in [frame, errorHistory, echoHistory, micHistory, overlap, errorPower, echoPower, micPower, noisePower, residual,
                        slowError, slowEcho, bandCross, bandEchoFluctuation, bandBroadCross, bandBroadLeak] {
            storage.clear()
        }
        micEchoCoherence.reset(); errorEchoCoherence.reset()
        for bin in 0..<binCount { gain[bin] = 1 }
        for band in 0..<bandCount { bandLeak[band] = 1; bandModelScale[band] = 1 }
        slowEchoTotal = 0; currentEchoTotal = 0; broadEchoFluctuation = 0
        coherence = 0; noiseInitialized = false; agcGain = 1; nearLevel = 0; previousMicEnergy = 0
    }

    /// The echo path changed: the filter's expected misadjustment is trusted in full again
    /// (its calibration learned how little a converged filter misses).
    func echoPathChanged() {
        for band in 0..<bandCount { bandModelScale[band] = 1 }
    }

    /// Windowed spectrum of [history, block]; history becomes block.
    private func analyze(_ block: UnsafePointer<Float>, history: FloatStorage, real: FloatStorage, imaginary: FloatStorage) {
        let b = blockFrames
        for n in 0..<b {
            frame[n] = history[n] * window[n]
            frame[b + n] = block[n] * window[b + n]
        }
        history.pointer.update(from: block, count: b)
        fft.forward(frame.pointer, real: real.pointer, imaginary: imaginary.pointer)
    }

    /// One block: `error` = linear filter output, `echo` = its echo estimate, `mic` = the
    /// microphone, `expectedResidual` = the filter's expected misadjustment per bin (nil: none),
    /// `uncertainEcho` = the echo the far end makes plausible per bin, passed while the echo
    /// path has just changed (nil otherwise);
    /// writes B output samples (delayed by one block) into `output`.
    /// `farEndActive`: the microphone may hold echo (the reference reached the filter
    /// recently enough for the room to still ring with it); `farEndPlaying`: it reaches the
    /// filter this very block — the leaks and the model's calibration learn only then, how
    /// the filter does while the far end plays, not in the echo's decay.
    func process(error: UnsafePointer<Float>, echo: UnsafePointer<Float>, mic: UnsafePointer<Float>,
                 expectedResidual: UnsafePointer<Float>?, uncertainEcho: UnsafePointer<Float>?,
                 farEndActive: Bool, farEndPlaying: Bool, bypassSuppression: Bool,
                 output: UnsafeMutablePointer<Float>) {
        let b = blockFrames, k = binCount
        analyze(error, history: errorHistory, real: errorReal, imaginary: errorImaginary)
        analyze(echo, history: echoHistory, real: echoReal, imaginary: echoImaginary)
        analyze(mic, history: micHistory, real: micReal, imaginary: micImaginary)

        var totalError: Float = 0, totalEcho: Float = 0
        for bin in 0..<k {
            let e2 = errorReal[bin] * errorReal[bin] + errorImaginary[bin] * errorImaginary[bin]
            let y2 = echoReal[bin] * echoReal[bin] + echoImaginary[bin] * echoImaginary[bin]
            let d2 = micReal[bin] * micReal[bin] + micImaginary[bin] * micImaginary[bin]
            errorPower[bin] += spectrumRate * (e2 - errorPower[bin])
            echoPower[bin] += spectrumRate * (y2 - echoPower[bin])
            micPower[bin] += spectrumRate * (d2 - micPower[bin])
            totalError += errorPower[bin]; totalEcho += echoPower[bin]
        }
        if !noiseInitialized {
            for bin in 0..<k { noisePower[bin] = max(errorPower[bin], 1e-12) }
            noiseInitialized = true
        }
        var totalNoise: Float = 0
        for bin in 0..<k {
            let p = errorPower[bin]
            // Minimum tracking: follow down quickly, creep up ~3 dB/s.
            if p < noisePower[bin] { noisePower[bin] += 0.3 * (p - noisePower[bin]) } else { noisePower[bin] *= 1.0 + 0.7 * Float(b) / Float(sampleRate) }
            noisePower[bin] = max(noisePower[bin], 1e-14)
            totalNoise += noisePower[bin]
        }
        currentEchoTotal = totalEcho
        // Half a sqrt-Hann-windowed 2B spectrum holds B² × the sample variance.
        noiseEnergy = totalNoise / Float(b)
        updateCoherence()
        updateErrorEchoCoherence()
        measureFluctuations()

        // What the suppressor expects of the error with the leaks learned so far.
        estimateResidual(expectedResidual: expectedResidual)
        var expected: Float = 0
        for bin in 0..<k { expected += residual[bin] + noisePower[bin] }
        let talker = totalError > talkerRatio * expected
        if farEndPlaying && !talker {
            learnLeaks(totalError: totalError)
            if let model = expectedResidual { learnModelScale(model) }
        }
        estimateResidual(expectedResidual: expectedResidual)
        if farEndActive {
            // Where the error follows the echo estimate (a path change, a burst the filter
            // mispredicts), that share of it is echo, whatever the leaks say.
            for bin in 0..<k {
                let band = bandOfBin[bin]
                let coherence = bandCoherenceWeight[band] > 0 ? bandCoherenceSum[band] / bandCoherenceWeight[band] : 0
                let share = min(1, errorEchoGain * max(0, (coherence - errorEchoBias) / (1 - errorEchoBias)))
                residual[bin] = max(residual[bin], share * errorPower[bin])
            }
            if let uncertainEcho {
                // The echo path has just changed and the filter is re-learning it: whatever
                // the far end can explain is echo (a near-end talker far above it still passes).
                for bin in 0..<k {
                    residual[bin] = max(residual[bin], min(errorPower[bin], uncertainEchoGain * uncertainEcho[bin]))
                }
            }
        }

        // Strength 0.5 (default) subtracts the residual estimate once; 1 three times; below
        // 0.5 a fraction of it.
        let overSubtraction: Float = strength <= 0.5 ? 2 * strength : 1 + 4 * (strength - 0.5)
        let floorGain: Float = strength > 0 ? powf(10, -(20 + 40 * strength) / 20) : 1
        for bin in 0..<k {
            let lo = max(0, bin - 1), hi = min(k - 1, bin + 1)
            let r = (residual[lo] + residual[bin] + residual[hi]) / 3
            let e = (errorPower[lo] + errorPower[bin] + errorPower[hi]) / 3 + 1e-20
            var g: Float = 1
            if !bypassSuppression && strength > 0 {
                g = max(floorGain, 1 - overSubtraction * r / e)
            }
            if noiseSuppression && !bypassSuppression {
                let gn = max(0.18, 1 - 1.5 * noisePower[bin] / e)
                g *= gn
            }
            gain[bin] = g
        }
        isDoubleTalk = farEndActive && talker && totalError > 4 * totalNoise
        isFarEndOnly = farEndActive && !talker && totalEcho > 2 * totalNoise
        let nearActive = (talker || !farEndActive) && totalError > 10 * totalNoise

        for bin in 0..<k {
            let g = gain[bin]
            errorReal[bin] *= g
            errorImaginary[bin] *= g
        }
        if comfortNoise && !bypassSuppression {
            for bin in 1..<(k - 1) {
                let fill = (noisePower[bin] * max(0, 1 - gain[bin] * gain[bin])).squareRoot() * 0.5
                errorReal[bin] += fill * nextUniform()
                errorImaginary[bin] += fill * nextUniform()
            }
        }
        fft.inverse(real: errorReal.pointer, imaginary: errorImaginary.pointer, output: frame.pointer)
        var outEnergy: Float = 0
        for n in 0..<b {
            let y = overlap[n] + frame[n] * window[n]
            output[n] = y
            outEnergy += y * y
            overlap[n] = frame[b + n] * window[b + n]
        }
        // AGC: follow the near-end level only while the near end talks (target −26 dBFS,
        // ±12 dB), ramped across the block.
        if automaticGainControl || agcGain != 1 {
            var targetGain: Float = 1
            if automaticGainControl {
                if nearActive {
                    let level = (outEnergy / Float(b)).squareRoot()
                    nearLevel = nearLevel == 0 ? level : nearLevel + 0.05 * (level - nearLevel)
                }
                targetGain = nearLevel > 0 ? max(0.25, min(4, 0.05 / nearLevel)) : agcGain
            }
            let startGain = agcGain
            agcGain += 0.05 * (targetGain - agcGain)
            if abs(agcGain - 1) < 1e-4 && !automaticGainControl { agcGain = 1 }
            outEnergy = 0
            for n in 0..<b {
                output[n] *= startGain + (agcGain - startGain) * Float(n) / Float(b)
                outEnergy += output[n] * output[n]
            }
        }
        let inEnergy = previousMicEnergy
        var currentMic: Float = 0
        for n in 0..<b { currentMic += mic[n] * mic[n] }
        previousMicEnergy = currentMic
        micEnergy = inEnergy
        outputEnergy = outEnergy
    }

    /// Coherence of microphone and echo estimate over the speech band (the canceller's
    /// two-path control asks it whether the far end dominates).
    private func updateCoherence() {
        micEchoCoherence.update(aReal: micReal.pointer, aImaginary: micImaginary.pointer,
                                bReal: echoReal.pointer, bImaginary: echoImaginary.pointer)
        var coherenceSum: Float = 0, coherenceWeight: Float = 0
        for bin in coherenceLow...coherenceHigh {
            coherenceSum += micEchoCoherence.coherence(at: bin) * echoPower[bin]
            coherenceWeight += echoPower[bin]
        }
        coherence = coherenceWeight > 0 ? coherenceSum / coherenceWeight : 0
    }

    /// Per band, the error-power-weighted coherence of error and echo estimate.
    private func updateErrorEchoCoherence() {
        errorEchoCoherence.update(aReal: errorReal.pointer, aImaginary: errorImaginary.pointer,
                                  bReal: echoReal.pointer, bImaginary: echoImaginary.pointer)
        let errorPowerSlow = errorEchoCoherence.powerA
        bandCoherenceSum.clear(); bandCoherenceWeight.clear()
        for bin in 1..<(binCount - 1) {
            bandCoherenceSum[bandOfBin[bin]] += errorEchoCoherence.coherence(at: bin) * errorPowerSlow[bin]
            bandCoherenceWeight[bandOfBin[bin]] += errorPowerSlow[bin]
        }
    }

    /// residual = leak·|Ŷ|² + model + broadband, per bin, from the current estimates.
    private func estimateResidual(expectedResidual: UnsafePointer<Float>?) {
        let k = binCount
        for bin in 0..<k {
            let band = bandOfBin[bin]
            var r = bandLeak[band] * echoPower[bin] + broadbandWeight * bandBroadLeak[band] * currentEchoTotal
            if let model = expectedResidual { r += bandModelScale[band] * model[bin] }
            residual[bin] = r
        }
    }

    /// This block's fluctuations of |E|² and |Ŷ|² around their slow means, per band (the
    /// slow means follow every block, so they are current when learning resumes).
    private func measureFluctuations() {
        let k = binCount
        bandError.clear(); bandEcho.clear(); bandErrorFluctuation.clear(); bandCrossNow.clear(); bandEchoNow.clear()
        for bin in 0..<k {
            let e2 = errorReal[bin] * errorReal[bin] + errorImaginary[bin] * errorImaginary[bin]
            let y2 = echoReal[bin] * echoReal[bin] + echoImaginary[bin] * echoImaginary[bin]
            slowError[bin] += slowRate * (e2 - slowError[bin])
            slowEcho[bin] += slowRate * (y2 - slowEcho[bin])
            let eh = e2 - slowError[bin], yh = y2 - slowEcho[bin]
            let band = bandOfBin[bin]
            bandCrossNow[band] += eh * yh
            bandEchoNow[band] += yh * yh
            bandErrorFluctuation[band] += eh
            bandError[band] += e2
            bandEcho[band] += y2
        }
        echoTotalNow = 0
        for band in 0..<bandCount { echoTotalNow += bandEcho[band] }
        slowEchoTotal += slowRate * (echoTotalNow - slowEchoTotal)
    }

    /// Calibrates the filter's expected misadjustment against the error it actually leaves.
    private func learnModelScale(_ model: UnsafePointer<Float>) {
        bandModel.clear(); bandExcess.clear()
        for bin in 0..<binCount {
            let band = bandOfBin[bin]
            bandModel[band] += model[bin]
            bandExcess[band] += max(0, errorPower[bin] - noisePower[bin])
        }
        for band in 0..<bandCount where bandModel[band] > 1e-20 {
            let ratio = min(1, bandExcess[band] / bandModel[band])
            let rate = (ratio > bandModelScale[band] ? modelRiseRate : modelRate) * min(1, bandEcho[band] / (bandError[band] + 1e-20))
            bandModelScale[band] += rate * (ratio - bandModelScale[band])
        }
    }

    /// Updates the band leaks from this block's fluctuations (only while no talker is suspected).
    private func learnLeaks(totalError: Float) {
        let totalFluctuation = echoTotalNow - slowEchoTotal
        let broadRate = leakRate * min(1, echoTotalNow / (totalError + 1e-20))
        broadEchoFluctuation += broadRate * (totalFluctuation * totalFluctuation - broadEchoFluctuation)
        for band in 0..<bandCount {
            // Learn slower where the error outweighs the echo estimate.
            let rate = leakRate * min(1, bandEcho[band] / (bandError[band] + 1e-20))
            bandCross[band] += rate * (bandCrossNow[band] - bandCross[band])
            bandEchoFluctuation[band] += rate * (bandEchoNow[band] - bandEchoFluctuation[band])
            if bandEchoFluctuation[band] > 1e-30 {
                bandLeak[band] = max(0.001, min(2, bandCross[band] / bandEchoFluctuation[band]))
            }
            // The band's share of the error that follows the total echo level, per bin.
            bandBroadCross[band] += broadRate * (bandErrorFluctuation[band] * totalFluctuation - bandBroadCross[band])
            bandBroadLeak[band] = broadEchoFluctuation > 1e-30
                ? max(0, min(1, bandBroadCross[band] / broadEchoFluctuation)) / Float(bandWidth[band])
                : 0
        }
    }

    private func nextUniform() -> Float {
        random = random &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: random)) / Float(Int32.max)
    }
}
