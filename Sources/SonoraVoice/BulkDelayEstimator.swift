#if canImport(Glibc)
import Glibc
#endif
import SonoraDSP

/// Finds and tracks the bulk delay between the loudspeaker reference and the microphone,
/// streaming and causal: both signals are low-passed and decimated to ~4 kHz, and every
/// hop (64 ms) the cross-spectrum of the last 128 ms of microphone against the reference
/// window reaching `maximumDelay` further back is added into an exponentially smoothed
/// cross-spectrum (time constant ~1 s). Its phase transform (GCC-PHAT, |S| normalised
/// away in the speech band) has a sharp peak at the direct-path delay even in
/// reverberant rooms and through double talk. A new delay is adopted only after several
/// consecutive hops agree on it, so a jump (a re-opened device, a re-routed speaker) is
/// re-found within ~0.3–1 s while single noisy hops never move the canceller.
final class BulkDelayEstimator {
    let factor: Int
    let decimatedRate: Double
    let maximumLag: Int            // decimated samples
    private let window = 512       // decimated mic samples per correlation
    private let hop = 256
    private let fftSize: Int
    private let fft: RealFFT
    private let lowpass: FloatStorage
    private let taps: Int
    private let refHistory: FloatStorage   // full-rate FIR history (circular, taps)
    private let micHistory: FloatStorage
    private var historyIndex = 0
    private var phase = 0
    private let refDecimated: FloatStorage // linear, fftSize (maximumLag + window valid)
    private let micDecimated: FloatStorage // linear, window
    private var pending = 0
    private let frame: FloatStorage
    private let refReal: FloatStorage, refImaginary: FloatStorage
    private let micReal: FloatStorage, micImaginary: FloatStorage
    private let crossReal: FloatStorage, crossImaginary: FloatStorage
    /// The cross-spectrum smoothed over ~0.2 s only: where the peak is now, for the drift
    /// tracker (the ~1 s average behind `delay` lags a drifting peak by seconds).
    private let fineReal: FloatStorage, fineImaginary: FloatStorage
    private let fineSmoothing: Float = 0.3
    /// Mean phase agreement (0…1) of the fine correlation's peak below which a hop is not
    /// used for the fine delay (noise alone gives ~0.03; echo 0.1–0.4).
    private let fineAgreement = 0.1
    private let correlation: FloatStorage
    private let lowBin: Int, highBin: Int
    private var filled = 0

    /// Current delay in full-rate samples (nil until found).
    private(set) var delay: Int?
    private(set) var confidence: Float = 0
    private var candidate = -1
    private var candidateCount = 0
    /// Latest sub-sample delay of the correlation peak (full-rate samples) and how many
    /// hops have produced one (the drift tracker reads a new value when this moves).
    private(set) var fineDelay = 0.0
    private(set) var fineDelayHops = 0
    /// Counts of adopted delay changes (for metrics and tests).
    private(set) var changes = 0

    init(sampleRate: Double, maximumDelay: Double) {
        factor = max(1, Int((sampleRate / 4000).rounded()))
        decimatedRate = sampleRate / Double(factor)
        var size = 1024
        while size - window < Int((maximumDelay * decimatedRate).rounded(.up)) + 8 { size *= 2 }
        fftSize = size
        maximumLag = size - window
        fft = RealFFT(size: size)
        taps = 8 * factor + 1
        lowpass = FloatStorage(count: taps)
        // Windowed sinc at 0.85 × the decimated Nyquist frequency.
        let cutoff = 0.85 * 0.5 / Double(factor)
        var sum = 0.0
        for n in 0..<taps {
            let t = Double(n - taps / 2)
            let sinc = t == 0 ? 2 * cutoff : sin(2 * Double.pi * cutoff * t) / (Double.pi * t)
            let hann = 0.5 - 0.5 * cos(2 * Double.pi * Double(n + 1) / Double(taps + 1))
            lowpass[n] = Float(sinc * hann)
            sum += sinc * hann
        }
        for n in 0..<taps { lowpass[n] = Float(Double(lowpass[n]) / sum) }
        refHistory = FloatStorage(count: taps)
        micHistory = FloatStorage(count: taps)
        refDecimated = FloatStorage(count: size)
        micDecimated = FloatStorage(count: window)
        frame = FloatStorage(count: size)
        let bins = size / 2 + 1
        refReal = FloatStorage(count: bins); refImaginary = FloatStorage(count: bins)
        micReal = FloatStorage(count: bins); micImaginary = FloatStorage(count: bins)
        crossReal = FloatStorage(count: bins); crossImaginary = FloatStorage(count: bins)
        fineReal = FloatStorage(count: bins); fineImaginary = FloatStorage(count: bins)
        correlation = FloatStorage(count: size)
        lowBin = max(1, Int(150 / decimatedRate * Double(size)))
        highBin = min(bins - 1, Int(0.85 * 0.5 * Double(size)))
    }

    func free() {
        for storage in [lowpass, refHistory, micHistory, refDecimated, micDecimated, frame, refReal, refImaginary,
                        micReal, micImaginary, crossReal, crossImaginary, fineReal, fineImaginary, correlation] { storage.free() }
    }

    func reset() {
        for storage in [refHistory, micHistory, refDecimated, micDecimated, crossReal, crossImaginary, fineReal, fineImaginary] { storage.clear() }
        delay = nil; confidence = 0; candidate = -1; candidateCount = 0; pending = 0; filled = 0; phase = 0
    }

    /// Feeds `count` full-rate samples of both signals.
    func push(reference: UnsafePointer<Float>, microphone: UnsafePointer<Float>, count: Int) {
        for n in 0..<count {
            refHistory[historyIndex] = reference[n]
            micHistory[historyIndex] = microphone[n]
            historyIndex = historyIndex + 1 == taps ? 0 : historyIndex + 1
            phase += 1
            if phase == factor {
                phase = 0
                var r: Float = 0, m: Float = 0
                var index = historyIndex
                for t in 0..<taps {
                    let c = lowpass[t]
                    r += c * refHistory[index]
                    m += c * micHistory[index]
                    index = index + 1 == taps ? 0 : index + 1
                }
                appendDecimated(r, m)
            }
        }
    }

    private func appendDecimated(_ r: Float, _ m: Float) {
        // Linear buffers shifted once per hop (cheap at 4 kHz): append at the end.
        let refEnd = maximumLag + window - hop + pending
        refDecimated[refEnd] = r
        micDecimated[window - hop + pending] = m
        pending += 1
        if pending == hop {
            pending = 0
            filled += hop
            correlate()
            let refValid = maximumLag + window
            (refDecimated.pointer).update(from: refDecimated.pointer + hop, count: refValid - hop)
            (micDecimated.pointer).update(from: micDecimated.pointer + hop, count: window - hop)
        }
    }

    private func correlate() {
        guard filled >= window else { return }
        let refValid = maximumLag + window
        var refEnergy: Float = 0, micEnergy: Float = 0
        for n in (refValid - window)..<refValid { refEnergy += refDecimated[n] * refDecimated[n] }
        for n in 0..<window { micEnergy += micDecimated[n] * micDecimated[n] }
        // Only hops where the far end is talking carry information about the delay.
        let silence: Float = Float(window) * 1e-7
        guard refEnergy > silence, micEnergy > silence else { return }
        frame.pointer.update(from: refDecimated.pointer, count: refValid)
        (frame.pointer + refValid).update(repeating: 0, count: fftSize - refValid)
        fft.forward(frame.pointer, real: refReal.pointer, imaginary: refImaginary.pointer)
        frame.pointer.update(from: micDecimated.pointer, count: window)
        (frame.pointer + window).update(repeating: 0, count: fftSize - window)
        fft.forward(frame.pointer, real: micReal.pointer, imaginary: micImaginary.pointer)
        let smoothing: Float = 0.06
        let bins = fftSize / 2 + 1
        // Normalise each hop's cross-spectrum by the hop's power so loud passages do not
        // dominate the average (the phase is what carries the delay).
        var norm: Float = 0
        for k in lowBin...highBin {
            norm += (refReal[k] * refReal[k] + refImaginary[k] * refImaginary[k]) * (micReal[k] * micReal[k] + micImaginary[k] * micImaginary[k])
        }
        let scale = 1 / (norm / Float(highBin - lowBin + 1)).squareRoot()
        for k in 0..<bins {
            // conj(M)·R: c[q] = Σ m[j] r[j + q], lag τ = maximumLag − q.
            let mr = micReal[k], mi = micImaginary[k], rr = refReal[k], ri = refImaginary[k]
            let cr = (mr * rr + mi * ri) * scale
            let ci = (mr * ri - mi * rr) * scale
            crossReal[k] += smoothing * (cr - crossReal[k])
            crossImaginary[k] += smoothing * (ci - crossImaginary[k])
            fineReal[k] += fineSmoothing * (cr - fineReal[k])
            fineImaginary[k] += fineSmoothing * (ci - fineImaginary[k])
        }
        phaseTransform(crossReal, crossImaginary, into: micReal, micImaginary)
        fft.inverse(real: micReal.pointer, imaginary: micImaginary.pointer, output: correlation.pointer)
        var best = 0
        var bestValue: Float = -.infinity
        var squares: Float = 0
        for q in 0...maximumLag {
            let value = correlation[q]
            squares += value * value
            if value > bestValue { bestValue = value; best = q }
        }
        let rms = (squares / Float(maximumLag + 1)).squareRoot()
        confidence = rms > 0 ? bestValue / rms : 0
        guard confidence >= 9 else { candidateCount = 0; return }
        // Sub-sample position of the peak (parabola), in full-rate samples: the drift
        // tracker follows how it moves.
        if best > 0 && best < maximumLag {
            let (peak, strength) = refinedPeak(near: best)
            if strength / Double(highBin - lowBin + 1) > fineAgreement {
                fineDelay = (Double(maximumLag) - peak) * Double(factor)
                fineDelayHops += 1
            }
        }
        let lag = (maximumLag - best) * factor
        if let current = delay, abs(current - lag) <= 2 * factor {
            candidateCount = 0
            return
        }
        if abs(lag - candidate) <= 2 * factor { candidateCount += 1 } else { candidate = lag; candidateCount = 1 }
        // The first lock needs less agreement than a jump away from a working delay.
        if candidateCount >= (delay == nil ? 2 : 4) {
            delay = lag
            changes += 1
            candidateCount = 0
        }
    }

    /// The phase transform on the speech band: each bin's unit phasor, zero outside the band.
    private func phaseTransform(_ real: FloatStorage, _ imaginary: FloatStorage, into outReal: FloatStorage, _ outImaginary: FloatStorage) {
        for k in 0...(fftSize / 2) {
            if k < lowBin || k > highBin {
                outReal[k] = 0; outImaginary[k] = 0
            } else {
                let magnitude = (real[k] * real[k] + imaginary[k] * imaginary[k]).squareRoot() + 1e-12
                outReal[k] = real[k] / magnitude
                outImaginary[k] = imaginary[k] / magnitude
            }
        }
    }

    /// The fine correlation's peak within four lags of `best`, to a small fraction of a
    /// decimated lag, and its height over the band's width (the phases' mean agreement, 0…1).
    /// The phase-transformed fine cross-spectrum goes through one inverse FFT for the whole
    /// lags; between them the correlation is band-limited, so it is evaluated exactly at
    /// fractional lags (Σ_k Re(P_k e^{j2πkq/N})) for a second parabola an eighth of a lag
    /// wide: a parabola through whole decimated lags alone is biased toward them by up to a
    /// third of a lag (1.3 samples at 16 kHz), which made a drifting delay a staircase.
    private func refinedPeak(near best: Int) -> (lag: Double, value: Double) {
        // The PHAT fine spectrum in refReal/refImaginary (free once the hop's cross-spectrum is taken).
        phaseTransform(fineReal, fineImaginary, into: refReal, refImaginary)
        fft.inverse(real: refReal.pointer, imaginary: refImaginary.pointer, output: correlation.pointer)
        var peak = best
        for q in max(1, best - 16)...min(maximumLag - 1, best + 16) where correlation[q] > correlation[peak] { peak = q }
        let before = correlation[max(0, peak - 1)], at = correlation[peak], after = correlation[min(maximumLag, peak + 1)]
        let denominator = before - 2 * at + after
        let coarse = Double(peak) + (denominator < 0 ? Double(max(-0.5, min(0.5, 0.5 * (before - after) / denominator))) : 0)
        let spacing = 0.125
        let left = fineCorrelation(at: coarse - spacing), middle = fineCorrelation(at: coarse), right = fineCorrelation(at: coarse + spacing)
        let curvature = left - 2 * middle + right
        let shift = curvature < 0 ? max(-1, min(1, 0.5 * (left - right) / curvature)) : 0
        return (coarse + shift * spacing, max(left, middle, right))
    }

    /// The PHAT fine correlation (spectrum in refReal/refImaginary) at a fractional lag index q.
    private func fineCorrelation(at q: Double) -> Double {
        let step = 2 * Double.pi * q / Double(fftSize)
        var c = cos(step * Double(lowBin)), s = sin(step * Double(lowBin))
        let dc = cos(step), ds = sin(step)
        var sum = 0.0
        for k in lowBin...highBin {
            sum += Double(refReal[k]) * c - Double(refImaginary[k]) * s
            let next = c * dc - s * ds
            s = s * dc + c * ds
            c = next
        }
        return sum
    }
}
