#if canImport(Glibc)
import Glibc
#endif
import SonoraDSP

/// A partitioned-block frequency-domain adaptive filter (PBFDAF / MDF): M partitions of
/// B taps each, every partition one (2B)-point spectrum, the reference history kept as
/// the spectra of its last M blocks (shared between the canceller's two filters, see
/// `ReferenceSpectra`). Output by overlap-save; adaptation by the partitioned
/// frequency-domain Kalman filter (`adaptKalman`): every coefficient carries its own
/// uncertainty, which sets its step and tells the suppressor how much echo the filter
/// is expected to miss; the gradient
/// constraint (zeroing the wrapped half of each partition's impulse response) is applied
/// round-robin to a few partitions per block, as AEC3 and Speex's AUMDF do, which keeps
/// the cost at O(few FFTs) per block while every partition is constrained every few blocks.
final class PartitionedFilter {
    let blockFrames: Int
    let partitionCount: Int
    let binCount: Int
    /// Partition m's spectrum: real at `real + m × binCount`.
    let real: FloatStorage
    let imaginary: FloatStorage
    /// Kalman state-error variance per partition and bin (how uncertain each coefficient is).
    let variance: FloatStorage
    /// Σ_m P_m(k)·|X_m(k)|²: the expected residual echo power per bin (scratch, per block).
    let residualPower: FloatStorage
    /// The prior variance per partition (how much echo path energy a partition may hold
    /// before anything is learned): the state's starting point and what fresh partitions get.
    let prior: FloatStorage
    private var nextToConstrain = 0

    init(blockFrames: Int, partitionCount: Int) {
        self.blockFrames = blockFrames
        self.partitionCount = partitionCount
        binCount = blockFrames + 1
        real = FloatStorage(count: partitionCount * binCount)
        imaginary = FloatStorage(count: partitionCount * binCount)
        variance = FloatStorage(count: partitionCount * binCount)
        residualPower = FloatStorage(count: binCount)
        prior = FloatStorage(count: partitionCount)
        for m in 0..<partitionCount { prior[m] = 1 }
        restorePrior()
    }

    func free() { real.free(); imaginary.free(); variance.free(); residualPower.free(); prior.free() }

    func reset() {
        real.clear(); imaginary.clear(); nextToConstrain = 0
        restorePrior()
    }

    /// Sets the prior: an exponentially decaying envelope (a room's reverberation, `decay`
    /// per partition) holding `energy` in all, so the direct path and early reflections
    /// start uncertain and adapt fast while the tail is not presumed louder than a room makes it.
    func setPrior(energy: Float, decay: Float) {
        var sum: Float = 0
        for m in 0..<partitionCount { prior[m] = powf(decay, Float(m)); sum += prior[m] }
        for m in 0..<partitionCount { prior[m] *= energy / sum }
        restorePrior()
    }

    /// Makes every coefficient as uncertain as the prior says (start, a new bulk delay: what
    /// was learned moves with it, but is no longer trusted).
    func restorePrior() {
        for m in 0..<partitionCount {
            (variance.pointer + m * binCount).update(repeating: prior[m], count: binCount)
        }
    }

    /// Σ_m P_m(k)·|X_m(k)|² into `residualPower`.
    func updateResidualPower(_ reference: ReferenceSpectra) {
        let k = binCount
        let out = residualPower.pointer
        out.update(repeating: 0, count: k)
        for m in 0..<partitionCount {
            let xr = reference.real(m), xi = reference.imaginary(m)
            let p = variance.pointer + m * k
            for bin in 0..<k { out[bin] += p[bin] * (xr[bin] * xr[bin] + xi[bin] * xi[bin]) }
        }
    }

    /// The echo this filter's envelope makes plausible per bin: Σ_m g_m·|X_m(k)|², g_m being
    /// partition m's mean |W_m|² over all bins — the echo path's energy decay with its
    /// spectral detail smoothed away, so bins the far end has hardly excited (unlearned)
    /// get the level the room gives elsewhere, not zero and not the prior.
    func plausibleEcho(_ reference: ReferenceSpectra, into out: UnsafeMutablePointer<Float>) {
        let k = binCount
        out.update(repeating: 0, count: k)
        for m in 0..<partitionCount {
            let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
            var gain: Float = 0
            for bin in 0..<k { gain += wr[bin] * wr[bin] + wi[bin] * wi[bin] }
            gain /= Float(k)
            let xr = reference.real(m), xi = reference.imaginary(m)
            for bin in 0..<k { out[bin] += gain * (xr[bin] * xr[bin] + xi[bin] * xi[bin]) }
        }
    }

    /// Σ_m mean_k |W_m(k)|²: the echo path's energy gain (its ERL, inverted), spectral
    /// detail and delay ignored.
    func echoPathGain() -> Float {
        var total: Float = 0
        for index in 0..<(partitionCount * binCount) { total += real[index] * real[index] + imaginary[index] * imaginary[index] }
        return total / Float(binCount)
    }

    /// Multiplies partition variances in `bin` by `factor` (covariance inflation: echo the
    /// filter misses — a path change — makes every coefficient in that bin uncertain again).
    func inflateVariance(bin: Int, factor: Float) {
        let k = binCount
        for m in 0..<partitionCount { variance[m * k + bin] *= factor }
    }

    /// Partitioned frequency-domain Kalman update (Enzner & Vary; Kuech et al.): per bin,
    /// μ_m = P_m / (Σ P|X|² + Ψ), W_m += μ_m·conj(X_m)·E, P_m ← A²(1 − ½μ_m|X_m|²)P_m + (1 − A²)|W_m|².
    /// Ψ (`noisePower`) is the near-end-plus-noise power in the error: large in double talk, so
    /// the filter stands still; the variances shrink as it converges, so misadjustment falls.
    func adaptKalman(_ reference: ReferenceSpectra, errorReal: UnsafePointer<Float>, errorImaginary: UnsafePointer<Float>,
                     noisePower: UnsafePointer<Float>, transition: Float, regularization: Float,
                     constrainCount: Int, fft: RealFFT, scratch: UnsafeMutablePointer<Float>) {
        let k = binCount
        let a2 = transition * transition
        let residual = residualPower.pointer
        for m in 0..<partitionCount {
            let xr = reference.real(m), xi = reference.imaginary(m)
            let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
            let p = variance.pointer + m * k
            for bin in 0..<k {
                let a = xr[bin], b = xi[bin], er = errorReal[bin], ei = errorImaginary[bin]
                let x2 = a * a + b * b
                let mu = p[bin] / (residual[bin] + noisePower[bin] + regularization)
                wr[bin] += mu * (a * er + b * ei)
                wi[bin] += mu * (a * ei - b * er)
                let w2 = wr[bin] * wr[bin] + wi[bin] * wi[bin]
                p[bin] = a2 * max(0, 1 - 0.5 * mu * x2) * p[bin] + (1 - a2) * w2
            }
        }
        let time = scratch
        for _ in 0..<min(constrainCount, partitionCount) {
            let m = nextToConstrain
            nextToConstrain = (nextToConstrain + 1) % partitionCount
            let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
            fft.inverse(real: wr, imaginary: wi, output: time)
            (time + blockFrames).update(repeating: 0, count: blockFrames)
            fft.forward(time, real: wr, imaginary: wi)
        }
    }

    func copy(from other: PartitionedFilter) {
        real.pointer.update(from: other.real.pointer, count: real.count)
        imaginary.pointer.update(from: other.imaginary.pointer, count: imaginary.count)
    }

    /// Moves the impulse response `blocks` partitions earlier (positive) or later
    /// (negative): used when the bulk delay in front of the filter grows or shrinks by
    /// whole blocks, so the converged response survives the re-alignment.
    func shift(byBlocks blocks: Int) {
        guard blocks != 0 else { return }
        if abs(blocks) >= partitionCount { reset(); return }
        Self.shift(real, by: blocks, partitions: partitionCount, bins: binCount, fill: 0)
        Self.shift(imaginary, by: blocks, partitions: partitionCount, bins: binCount, fill: 0)
        Self.shift(variance, by: blocks, partitions: partitionCount, bins: binCount, fill: 0)
        // Partitions the shift brought in start from the prior again.
        let fresh = blocks > 0 ? (partitionCount - blocks)..<partitionCount : 0..<(-blocks)
        for m in fresh { (variance.pointer + m * binCount).update(repeating: prior[m], count: binCount) }
    }

    private static func shift(_ storage: FloatStorage, by blocks: Int, partitions: Int, bins k: Int, fill: Float) {
        let base = storage.pointer
        if blocks > 0 {
            for m in 0..<(partitions - blocks) { (base + m * k).update(from: base + (m + blocks) * k, count: k) }
            (base + (partitions - blocks) * k).update(repeating: fill, count: blocks * k)
        } else {
            let s = -blocks
            for m in stride(from: partitions - 1, through: s, by: -1) { (base + m * k).update(from: base + (m - s) * k, count: k) }
            base.update(repeating: fill, count: s * k)
        }
    }

    /// Echo estimate spectrum Y = Σ_m W_m · X_m into `outReal/outImaginary`.
    func filter(_ reference: ReferenceSpectra, outReal: UnsafeMutablePointer<Float>, outImaginary: UnsafeMutablePointer<Float>) {
        let k = binCount
        outReal.update(repeating: 0, count: k)
        outImaginary.update(repeating: 0, count: k)
        for m in 0..<partitionCount {
            let xr = reference.real(m), xi = reference.imaginary(m)
            let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
            for bin in 0..<k {
                let a = xr[bin], b = xi[bin], c = wr[bin], d = wi[bin]
                outReal[bin] += a * c - b * d
                outImaginary[bin] += a * d + b * c
            }
        }
    }
}

/// The spectra of the last M reference blocks ((2B)-point, overlap-save frames), newest
/// first, in a ring.
final class ReferenceSpectra {
    let partitionCount: Int
    let binCount: Int
    private let realStorage: FloatStorage
    private let imaginaryStorage: FloatStorage
    private var newest = 0

    init(binCount: Int, partitionCount: Int) {
        self.binCount = binCount
        self.partitionCount = partitionCount
        realStorage = FloatStorage(count: binCount * partitionCount)
        imaginaryStorage = FloatStorage(count: binCount * partitionCount)
    }

    func free() { realStorage.free(); imaginaryStorage.free() }

    func reset() { realStorage.clear(); imaginaryStorage.clear(); newest = 0 }

    @inline(__always) func real(_ age: Int) -> UnsafeMutablePointer<Float> {
        realStorage.pointer + ((newest + age) % partitionCount) * binCount
    }

    @inline(__always) func imaginary(_ age: Int) -> UnsafeMutablePointer<Float> {
        imaginaryStorage.pointer + ((newest + age) % partitionCount) * binCount
    }

    /// Per bin, the largest reference power over the filter's span.
    func peakPower(into out: UnsafeMutablePointer<Float>) {
        out.update(repeating: 0, count: binCount)
        for m in 0..<partitionCount {
            let xr = real(m), xi = imaginary(m)
            for bin in 0..<binCount { out[bin] = max(out[bin], xr[bin] * xr[bin] + xi[bin] * xi[bin]) }
        }
    }

    /// Makes room for a new spectrum (the oldest is dropped) and returns where to write it.
    func push() -> (real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        newest = (newest + partitionCount - 1) % partitionCount
        return (real(0), imaginary(0))
    }
}
