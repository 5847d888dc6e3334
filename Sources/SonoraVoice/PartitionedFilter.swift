/// A partitioned-block frequency-domain adaptive filter (PBFDAF / MDF): M partitions of
/// B taps each, every partition one (2B)-point spectrum, the reference history kept as
/// the spectra of its last M blocks (shared between the canceller's two filters, see
/// `ReferenceSpectra`). Output by overlap-save; adaptation by frequency-domain NLMS
/// normalised per bin by the reference power over the whole filter length; the gradient
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
    private var nextToConstrain = 0

    init(blockFrames: Int, partitionCount: Int) {
        self.blockFrames = blockFrames
        self.partitionCount = partitionCount
        binCount = blockFrames + 1
        real = FloatStorage(count: partitionCount * binCount)
        imaginary = FloatStorage(count: partitionCount * binCount)
    }

    func free() { real.free(); imaginary.free() }

    func reset() { real.clear(); imaginary.clear(); nextToConstrain = 0 }

    func copy(from other: PartitionedFilter) {
        real.pointer.update(from: other.real.pointer, count: real.count)
        imaginary.pointer.update(from: other.imaginary.pointer, count: imaginary.count)
    }

    /// Moves the impulse response `blocks` partitions earlier (positive) or later
    /// (negative): used when the bulk delay in front of the filter grows or shrinks by
    /// whole blocks, so the converged response survives the re-alignment.
    func shift(byBlocks blocks: Int) {
        guard blocks != 0 else { return }
        let k = binCount
        if abs(blocks) >= partitionCount { reset(); return }
        if blocks > 0 {
            for m in 0..<(partitionCount - blocks) {
                (real.pointer + m * k).update(from: real.pointer + (m + blocks) * k, count: k)
                (imaginary.pointer + m * k).update(from: imaginary.pointer + (m + blocks) * k, count: k)
            }
            (real.pointer + (partitionCount - blocks) * k).update(repeating: 0, count: blocks * k)
            (imaginary.pointer + (partitionCount - blocks) * k).update(repeating: 0, count: blocks * k)
        } else {
            let s = -blocks
            for m in stride(from: partitionCount - 1, through: s, by: -1) {
                (real.pointer + m * k).update(from: real.pointer + (m - s) * k, count: k)
                (imaginary.pointer + m * k).update(from: imaginary.pointer + (m - s) * k, count: k)
            }
            real.pointer.update(repeating: 0, count: s * k)
            imaginary.pointer.update(repeating: 0, count: s * k)
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

    /// W_m += step(k) · conj(X_m) · E over every partition, then constrains `constrainCount`
    /// partitions (round-robin) through `fft` with `scratch` (2B + 2 × binCount floats).
    func adapt(_ reference: ReferenceSpectra, errorReal: UnsafePointer<Float>, errorImaginary: UnsafePointer<Float>,
               step: UnsafePointer<Float>, partitionScale: UnsafePointer<Float>, constrainCount: Int, fft: RealFFT, scratch: UnsafeMutablePointer<Float>) {
        let k = binCount
        for m in 0..<partitionCount {
            let xr = reference.real(m), xi = reference.imaginary(m)
            let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
            let scale = partitionScale[m]
            for bin in 0..<k {
                let a = xr[bin], b = xi[bin], er = errorReal[bin], ei = errorImaginary[bin], mu = step[bin] * scale
                // conj(X)·E = (a − ib)(er + i·ei)
                wr[bin] += mu * (a * er + b * ei)
                wi[bin] += mu * (a * ei - b * er)
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

    /// Proportionate step per partition (IPNLMS, Benesty & Gay): partitions holding more of
    /// the response adapt faster, so a room's direct path and early reflections converge
    /// in a fraction of the time a uniform step needs, while the mean scale stays 1.
    func proportionateScales(into scales: UnsafeMutablePointer<Float>, alpha: Float) {
        var total: Float = 0
        for m in 0..<partitionCount {
            scales[m] = partitionEnergy(m).squareRoot()
            total += scales[m]
        }
        let uniform = (1 - alpha) / 2
        let count = Float(partitionCount)
        for m in 0..<partitionCount {
            scales[m] = uniform + (1 + alpha) / 2 * count * scales[m] / (total + 1e-12)
        }
    }

    /// Energy of partition m's spectrum (Σ|W_m(k)|²): where the response lives, for the
    /// drift tracker and the leak estimate.
    func partitionEnergy(_ m: Int) -> Float {
        let k = binCount
        let wr = real.pointer + m * k, wi = imaginary.pointer + m * k
        var sum: Float = 0
        for bin in 0..<k { sum += wr[bin] * wr[bin] + wi[bin] * wi[bin] }
        return sum
    }
}

/// The spectra of the last M reference blocks ((2B)-point, overlap-save frames), newest
/// first, in a ring, plus Σ_m |X_m(k)|² kept up to date for the NLMS normalisation.
final class ReferenceSpectra {
    let partitionCount: Int
    let binCount: Int
    private let realStorage: FloatStorage
    private let imaginaryStorage: FloatStorage
    private var newest = 0
    /// Σ over the M stored spectra of |X_m(k)|².
    let power: FloatStorage

    init(binCount: Int, partitionCount: Int) {
        self.binCount = binCount
        self.partitionCount = partitionCount
        realStorage = FloatStorage(count: binCount * partitionCount)
        imaginaryStorage = FloatStorage(count: binCount * partitionCount)
        power = FloatStorage(count: binCount)
    }

    func free() { realStorage.free(); imaginaryStorage.free(); power.free() }

    func reset() { realStorage.clear(); imaginaryStorage.clear(); power.clear(); newest = 0 }

    @inline(__always) func real(_ age: Int) -> UnsafeMutablePointer<Float> {
        realStorage.pointer + ((newest + age) % partitionCount) * binCount
    }

    @inline(__always) func imaginary(_ age: Int) -> UnsafeMutablePointer<Float> {
        imaginaryStorage.pointer + ((newest + age) % partitionCount) * binCount
    }

    /// Makes room for a new spectrum (the oldest is dropped) and returns where to write it.
    func push() -> (real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        newest = (newest + partitionCount - 1) % partitionCount
        return (real(0), imaginary(0))
    }

    /// Recomputes Σ|X_m|² (exactly, so no rounding drift accumulates).
    func updatePower() {
        let p = power.pointer
        p.update(repeating: 0, count: binCount)
        for m in 0..<partitionCount {
            let xr = realStorage.pointer + m * binCount, xi = imaginaryStorage.pointer + m * binCount
            for bin in 0..<binCount { p[bin] += xr[bin] * xr[bin] + xi[bin] * xi[bin] }
        }
    }
}
