/// Magnitude-squared coherence of two spectra A and B, per bin: |S_AB|² / (S_AA·S_BB) from
/// exponentially smoothed cross- and auto-spectra, each summed over three neighbouring bins
/// (a short average in time alone is too noisy to decide on). The canceller asks it "does
/// A follow B here?": the error and the reference (echo the filter misses), the microphone
/// and the echo estimate (the far end dominates), the error and the echo estimate (echo the
/// filter mispredicts). Realtime-safe: storage is allocated at init.
final class SpectralCoherence {
    let binCount: Int
    let crossRate: Float, powerRate: Float
    private let crossReal: FloatStorage, crossImaginary: FloatStorage
    /// Smoothed |A|² and |B|² per bin.
    let powerA: FloatStorage, powerB: FloatStorage

    /// `crossRate` and `powerRate` smooth the cross- and auto-spectra per block (they may
    /// differ: a faster power average makes the coherence quicker to drop when one side
    /// changes).
    init(binCount: Int, crossRate: Float, powerRate: Float) {
        self.binCount = binCount
        self.crossRate = crossRate
        self.powerRate = powerRate
        crossReal = FloatStorage(count: binCount); crossImaginary = FloatStorage(count: binCount)
        powerA = FloatStorage(count: binCount); powerB = FloatStorage(count: binCount)
    }

    func free() { crossReal.free(); crossImaginary.free(); powerA.free(); powerB.free() }

    func reset() { crossReal.clear(); crossImaginary.clear(); powerA.clear(); powerB.clear() }

    /// Folds one block's spectra into the averages.
    func update(aReal: UnsafePointer<Float>, aImaginary: UnsafePointer<Float>,
                bReal: UnsafePointer<Float>, bImaginary: UnsafePointer<Float>) {
        for bin in 0..<binCount {
            let ar = aReal[bin], ai = aImaginary[bin], br = bReal[bin], bi = bImaginary[bin]
            // A·conj(B)
            crossReal[bin] += crossRate * (ar * br + ai * bi - crossReal[bin])
            crossImaginary[bin] += crossRate * (ai * br - ar * bi - crossImaginary[bin])
            powerA[bin] += powerRate * (ar * ar + ai * ai - powerA[bin])
            powerB[bin] += powerRate * (br * br + bi * bi - powerB[bin])
        }
    }

    /// Coherence at `bin` (0…1) over the bin and its neighbours (the edges use what exists).
    @inline(__always) func coherence(at bin: Int) -> Float {
        let lo = bin > 0 ? bin - 1 : bin, hi = bin + 1 < binCount ? bin + 1 : bin
        let sr = crossReal[lo] + crossReal[bin] + crossReal[hi]
        let si = crossImaginary[lo] + crossImaginary[bin] + crossImaginary[hi]
        let sa = powerA[lo] + powerA[bin] + powerA[hi]
        let sb = powerB[lo] + powerB[bin] + powerB[hi]
        return min(1, (sr * sr + si * si) / (sa * sb + 1e-20))
    }
}
