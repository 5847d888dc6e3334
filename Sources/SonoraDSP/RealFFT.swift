#if canImport(Glibc)
import Glibc
#endif

/// A real-input FFT of a fixed power-of-two size N, computed as one complex `FFT` of N/2
/// points on the even/odd samples packed as real/imaginary parts, then split into the
/// N/2 + 1 non-negative-frequency bins: half the work of a complex FFT of N points on a
/// real signal. Everything is allocated at init; `forward`/`inverse` allocate nothing.
/// Its work buffers make one instance usable from one thread at a time.
///
/// Spectra are split arrays of `binCount` = N/2 + 1 values (bin 0 and bin N/2 have a
/// zero imaginary part). `forward` is unscaled; `inverse` scales by 1/N, so
/// `inverse(forward(x)) == x`.
public final class RealFFT: @unchecked Sendable {
    public let size: Int
    public var binCount: Int { half + 1 }
    private let half: Int
    /// The N/2-point complex transform.
    private let complex: FFT
    /// e^{-2πik/N} for the real/complex split, k = 0…N/2.
    private let splitCos: UnsafeMutablePointer<Float>
    private let splitSin: UnsafeMutablePointer<Float>
    private let workReal: UnsafeMutablePointer<Float>
    private let workImaginary: UnsafeMutablePointer<Float>
    /// The inverse's split values in natural order, before the bit-reversal scatter.
    private let splitReal: UnsafeMutablePointer<Float>
    private let splitImaginary: UnsafeMutablePointer<Float>

    /// `size` must be a power of two ≥ 4.
    public init(size: Int) {
        precondition(size >= 4 && size & (size - 1) == 0, "RealFFT size must be a power of two ≥ 4")
        self.size = size
        half = size / 2
        complex = FFT(size: half)
        splitCos = .allocate(capacity: half + 1)
        splitSin = .allocate(capacity: half + 1)
        for k in 0...half {
            let angle = -2 * Double.pi * Double(k) / Double(size)
            splitCos[k] = Float(cos(angle))
            splitSin[k] = Float(sin(angle))
        }
        workReal = .allocate(capacity: half + 1)
        workImaginary = .allocate(capacity: half + 1)
        splitReal = .allocate(capacity: half)
        splitImaginary = .allocate(capacity: half)
    }

    deinit {
        splitCos.deallocate(); splitSin.deallocate()
        workReal.deallocate(); workImaginary.deallocate()
        splitReal.deallocate(); splitImaginary.deallocate()
    }

    /// Spectrum of `input` (N samples) into `real`/`imaginary` (N/2 + 1 values each).
    public func forward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        let zr = workReal, zi = workImaginary, reversal = complex.reversal
        for n in 0..<half {
            let target = Int(reversal[n])
            zr[target] = input[2 * n]
            zi[target] = input[2 * n + 1]
        }
        complex.butterflies(zr, zi, conjugate: false)
        // X[k] = (Z[k] + Z*[M−k])/2 − i·w^k·(Z[k] − Z*[M−k])/2, w = e^{-2πi/N}.
        real[0] = zr[0] + zi[0]
        imaginary[0] = 0
        real[half] = zr[0] - zi[0]
        imaginary[half] = 0
        if half > 1 {
            for k in 1..<half {
                let ar = zr[k], ai = zi[k]
                let br = zr[half - k], bi = -zi[half - k]
                let evenR = 0.5 * (ar + br), evenI = 0.5 * (ai + bi)
                let oddR = 0.5 * (ai - bi), oddI = -0.5 * (ar - br)  // (a − b)/(2i)
                let wr = splitCos[k], wi = splitSin[k]
                real[k] = evenR + wr * oddR - wi * oddI
                imaginary[k] = evenI + wr * oddI + wi * oddR
            }
        }
    }

    /// Signal (N samples, scaled by 1/N) of the spectrum `real`/`imaginary` into `output`.
    public func inverse(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>) {
        let zr = workReal, zi = workImaginary, reversal = complex.reversal
        let sr = splitReal, si = splitImaginary
        // Z[k] = E[k] + i·O[k]: E = (X[k] + X*[M−k])/2, O = (X[k] − X*[M−k])·w^{-k}/2.
        // Computed in natural order first (a loop the compiler vectorizes), then scattered
        // into bit-reversed order (the scatter alone stays scalar).
        for k in 0..<half {
            let ar = real[k], ai = imaginary[k]
            let br = real[half - k], bi = -imaginary[half - k]
            let evenR = 0.5 * (ar + br), evenI = 0.5 * (ai + bi)
            let dr = 0.5 * (ar - br), di = 0.5 * (ai - bi)
            let wr = splitCos[k], wi = -splitSin[k]
            let oddR = dr * wr - di * wi, oddI = dr * wi + di * wr
            sr[k] = evenR - oddI
            si[k] = evenI + oddR
        }
        for k in 0..<half {
            let target = Int(reversal[k])
            zr[target] = sr[k]
            zi[target] = si[k]
        }
        complex.butterflies(zr, zi, conjugate: true)
        // Z was halved in the split above, so the N/2-point inverse's 1/(N/2) makes 1/N overall.
        let scale = 1 / Float(half)
        for n in 0..<half {
            output[2 * n] = zr[n] * scale
            output[2 * n + 1] = zi[n] * scale
        }
    }
}
