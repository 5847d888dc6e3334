#if canImport(Glibc)
import Glibc
#endif

/// Removes what the linear filter leaves: a per-bin gain on a weighted overlap-add
/// (sqrt-Hann, 50 % overlap, hop = one block) analysis of the linear filter's output.
///
/// The residual echo in a bin is `ratio × |Ŷ|² × c²`: Ŷ is the filter's echo estimate;
/// `ratio` is how much of it the filter still lets through (error power above the noise
/// over echo-estimate power), learned only in bins where the microphone is coherent with
/// the echo estimate (the far end dominates there); c is that coherence now, so where
/// near-end speech takes a bin over (double talk) the suppressor backs off instead of
/// carving the talker out. The gain is a spectral subtraction (over-subtraction and
/// floor set by the strength); a stationary noise estimate (minimum tracking with slow
/// rise) gives optional noise suppression and comfort noise; an optional AGC follows
/// the near-end talker's level.
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
    private let crossReal: FloatStorage, crossImaginary: FloatStorage
    private let residualRatio: FloatStorage
    private let binCoherence: FloatStorage
    private let coherenceLow: Int, coherenceHigh: Int
    private let coherenceThreshold: Float = 0.8
    private let ratioUp: Float = 0.2
    private let ratioDown: Float = 0.05
    var isFarEndDominated = false
    /// Echo-estimate-weighted coherence of microphone and echo estimate (0…1).
    private(set) var coherence: Float = 0
    /// Mean residual echo ratio (linear filter output over echo estimate), a leak figure.
    var leak: Float {
        var sum: Float = 0
        for bin in 0..<binCount { sum += residualRatio[bin] }
        return sum / Float(binCount)
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
        crossReal = FloatStorage(count: k); crossImaginary = FloatStorage(count: k)
        residualRatio = FloatStorage(count: k)
        binCoherence = FloatStorage(count: k)
        for bin in 0..<k { residualRatio[bin] = 1 }
        coherenceLow = max(1, Int(200 / sampleRate * Double(2 * blockFrames)))
        coherenceHigh = min(k - 1, Int(4000 / sampleRate * Double(2 * blockFrames)))
        noisePower = FloatStorage(count: k)
        residual = FloatStorage(count: k)
        gain = FloatStorage(count: k)
        for bin in 0..<k { gain[bin] = 1 }
    }

    private var storages: [FloatStorage] {
        [window, frame, errorHistory, echoHistory, micHistory, overlap, errorReal, errorImaginary, echoReal, echoImaginary,
         micReal, micImaginary, errorPower, echoPower, micPower, noisePower, residual, gain, crossReal, crossImaginary, residualRatio, binCoherence]
    }

    func free() { for storage in storages { storage.free() } }

    func reset() {
        for storage in [frame, errorHistory, echoHistory, micHistory, overlap, errorPower, echoPower, micPower, noisePower, residual, crossReal, crossImaginary] {
            storage.clear()
        }
        for bin in 0..<binCount { gain[bin] = 1; residualRatio[bin] = 1 }
        coherence = 0; noiseInitialized = false; agcGain = 1; nearLevel = 0; previousMicEnergy = 0
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
    /// microphone; writes B output samples (delayed by one block) into `output`.
    /// `farEndActive`: the reference carried signal this block.
    func process(error: UnsafePointer<Float>, echo: UnsafePointer<Float>, mic: UnsafePointer<Float>,
                 farEndActive: Bool, bypassSuppression: Bool, output: UnsafeMutablePointer<Float>) {
        let b = blockFrames, k = binCount
        analyze(error, history: errorHistory, real: errorReal, imaginary: errorImaginary)
        analyze(echo, history: echoHistory, real: echoReal, imaginary: echoImaginary)
        analyze(mic, history: micHistory, real: micReal, imaginary: micImaginary)

        var totalError: Float = 0, totalEcho: Float = 0, totalMic: Float = 0
        for bin in 0..<k {
            let e2 = errorReal[bin] * errorReal[bin] + errorImaginary[bin] * errorImaginary[bin]
            let y2 = echoReal[bin] * echoReal[bin] + echoImaginary[bin] * echoImaginary[bin]
            let d2 = micReal[bin] * micReal[bin] + micImaginary[bin] * micImaginary[bin]
            errorPower[bin] += 0.5 * (e2 - errorPower[bin])
            echoPower[bin] += 0.5 * (y2 - echoPower[bin])
            micPower[bin] += 0.5 * (d2 - micPower[bin])
            // Leak: correlation of power fluctuations around slow means.
            totalError += errorPower[bin]; totalEcho += echoPower[bin]; totalMic += micPower[bin]
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
        // Far-end-dominated blocks: the microphone is coherent with the echo estimate in
        // the speech band. Near-end speech breaks that coherence, so double talk freezes
        // the residual-echo ratio below instead of teaching it to suppress the talker.
        var coherenceSum: Float = 0, coherenceWeight: Float = 0
        for bin in 0..<k {
            let cr = micReal[bin] * echoReal[bin] + micImaginary[bin] * echoImaginary[bin]
            let ci = micImaginary[bin] * echoReal[bin] - micReal[bin] * echoImaginary[bin]
            crossReal[bin] += 0.3 * (cr - crossReal[bin])
            crossImaginary[bin] += 0.3 * (ci - crossImaginary[bin])
        }
        for bin in 0..<k {
            let lo = bin > 0 ? bin - 1 : bin, hi = bin + 1 < k ? bin + 1 : bin
            let sr = crossReal[lo] + crossReal[bin] + crossReal[hi], si = crossImaginary[lo] + crossImaginary[bin] + crossImaginary[hi]
            let sm = micPower[lo] + micPower[bin] + micPower[hi], sy = echoPower[lo] + echoPower[bin] + echoPower[hi]
            let c = min(1, (sr * sr + si * si) / (sm * sy + 1e-24))
            binCoherence[bin] = c
            if bin >= coherenceLow && bin <= coherenceHigh {
                coherenceSum += c * echoPower[bin]
                coherenceWeight += echoPower[bin]
            }
        }
        coherence = coherenceWeight > 0 ? coherenceSum / coherenceWeight : 0
        let farEndDominated = farEndActive && totalEcho > 4 * totalNoise && coherence > coherenceThreshold
        isFarEndDominated = farEndDominated
        if farEndActive && totalEcho > 4 * totalNoise {
            // Residual ratio per bin, learned only in bins the far end dominates (coherent with
            // the echo estimate): up fast (an echo path change), down slowly. Bins where the
            // near end talks keep their ratio, so double talk does not teach suppression.
            for bin in 0..<k where binCoherence[bin] > coherenceThreshold {
                let ratio = min(2, max(0, errorPower[bin] - noisePower[bin]) / (echoPower[bin] + 1e-20))
                let rate: Float = ratio > residualRatio[bin] ? ratioUp : ratioDown
                residualRatio[bin] += rate * (ratio - residualRatio[bin])
            }
        }
        // Strength 0.5 (default) subtracts the residual estimate once; 1 three times.
        let overSubtraction: Float = 1 + 4 * max(0, strength - 0.5)
        let ratioCeiling: Float = 0.1 + 0.8 * strength
        let floorGain: Float = strength > 0 ? powf(10, -(20 + 40 * strength) / 20) : 1
        var residualTotal: Float = 0
        for bin in 0..<k {
            // Scaled by the bin's coherence with the echo estimate: where near-end speech
            // dominates a bin (double talk) the microphone stops following the echo estimate
            // and the suppressor backs off, instead of carving the talker out.
            let c = binCoherence[bin]
            residual[bin] = min(residualRatio[bin], ratioCeiling) * echoPower[bin] * c * c
            residualTotal += residual[bin]
        }
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
        // Double-talk / far-end-only state from the error's excess over residual + noise.
        let nearExcess = totalError - overSubtraction * residualTotal - 2 * totalNoise
        isDoubleTalk = farEndActive && nearExcess > 0.5 * totalError && totalError > 4 * totalNoise
        isFarEndOnly = farEndActive && !isDoubleTalk && totalEcho > 2 * totalNoise
        let nearActive = nearExcess > 0.5 * totalError && totalError > 10 * totalNoise

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

    private func nextUniform() -> Float {
        random = random &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: random)) / Float(Int32.max)
    }
}
