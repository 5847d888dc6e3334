#if canImport(Glibc)
import Glibc
#endif

/// A real-input FFT of a fixed power-of-two size N, computed as one complex FFT of N/2
/// points on the even/odd samples packed as real/imaginary parts, then split into the
/// N/2 + 1 non-negative-frequency bins. Half the work of SonoraDSP's complex `FFT` on a
/// real signal, with twiddles laid out stage by stage so each butterfly pass reads them
/// contiguously. Everything is allocated at init; `forward`/`inverse` allocate nothing.
///
/// Spectra are split arrays of `binCount` = N/2 + 1 values (bin 0 and bin N/2 have a
/// zero imaginary part). `forward` is unscaled; `inverse` scales by 1/N, so
/// `inverse(forward(x)) == x`.
public final class RealFFT: @unchecked Sendable {
    public let size: Int
    public var binCount: Int { half + 1 }
    private let half: Int
    /// Per-stage twiddles of the N/2-point complex FFT: stage with span h holds h values.
    private let stageCos: UnsafeMutablePointer<Float>
    private let stageSin: UnsafeMutablePointer<Float>
    /// e^{-2πik/N} for the real/complex split, k = 0…N/2.
    private let splitCos: UnsafeMutablePointer<Float>
    private let splitSin: UnsafeMutablePointer<Float>
    private let reversal: UnsafeMutablePointer<Int32>
    private let workReal: UnsafeMutablePointer<Float>
    private let workImaginary: UnsafeMutablePointer<Float>

    /// `size` must be a power of two ≥ 4.
    public init(size: Int) {
        precondition(size >= 4 && size & (size - 1) == 0, "RealFFT size must be a power of two ≥ 4")
        self.size = size
        half = size / 2
        stageCos = .allocate(capacity: half)
        stageSin = .allocate(capacity: half)
        var offset = 0
        var span = 1
        while span < half {
            for j in 0..<span {
                let angle = -Double.pi * Double(j) / Double(span)
                stageCos[offset + j] = Float(cos(angle))
                stageSin[offset + j] = Float(sin(angle))
            }
            offset += span
            span *= 2
        }
        splitCos = .allocate(capacity: half + 1)
        splitSin = .allocate(capacity: half + 1)
        for k in 0...half {
            let angle = -2 * Double.pi * Double(k) / Double(size)
            splitCos[k] = Float(cos(angle))
            splitSin[k] = Float(sin(angle))
        }
        reversal = .allocate(capacity: half)
        let bits = half.trailingZeroBitCount
        for index in 0..<half {
            var reversed = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
            reversal[index] = Int32(reversed)
        }
        workReal = .allocate(capacity: half + 1)
        workImaginary = .allocate(capacity: half + 1)
    }

    deinit {
        stageCos.deallocate(); stageSin.deallocate()
        splitCos.deallocate(); splitSin.deallocate()
        reversal.deallocate()
        workReal.deallocate(); workImaginary.deallocate()
    }

    /// Spectrum of `input` (N samples) into `real`/`imaginary` (N/2 + 1 values each).
    public func forward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        let zr = workReal, zi = workImaginary
        for n in 0..<half {
            let target = Int(reversal[n])
            zr[target] = input[2 * n]
            zi[target] = input[2 * n + 1]
        }
        butterflies(zr, zi, conjugate: false)
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
        let zr = workReal, zi = workImaginary
        // Z[k] = E[k] + i·O[k]: E = (X[k] + X*[M−k])/2, O = (X[k] − X*[M−k])·w^{-k}/2.
        for k in 0..<half {
            let ar = real[k], ai = imaginary[k]
            let br = real[half - k], bi = -imaginary[half - k]
            let evenR = 0.5 * (ar + br), evenI = 0.5 * (ai + bi)
            let dr = 0.5 * (ar - br), di = 0.5 * (ai - bi)
            let wr = splitCos[k], wi = -splitSin[k]
            let oddR = dr * wr - di * wi, oddI = dr * wi + di * wr
            let target = Int(reversal[k])
            zr[target] = evenR - oddI
            zi[target] = evenI + oddR
        }
        butterflies(zr, zi, conjugate: true)
        // Z was halved in the split above, so the N/2-point inverse's 1/(N/2) makes 1/N overall.
        let scale = 1 / Float(half)
        for n in 0..<half {
            output[2 * n] = zr[n] * scale
            output[2 * n + 1] = zi[n] * scale
        }
    }

    /// Radix-2 decimation-in-time passes over bit-reversed input, in place.
    @inline(__always)
    private func butterflies(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>, conjugate: Bool) {
        // First pass (span 1) needs no twiddles.
        var start = 0
        while start < half {
            let ar = re[start], ai = im[start], br = re[start + 1], bi = im[start + 1]
            re[start] = ar + br; im[start] = ai + bi
            re[start + 1] = ar - br; im[start + 1] = ai - bi
            start += 2
        }
        var offset = 1
        var span = 2
        let sign: Float = conjugate ? -1 : 1
        while span < half {
            let cosines = stageCos + offset, sines = stageSin + offset
            var base = 0
            while base < half {
                let upperR = re + base, upperI = im + base
                let lowerR = re + base + span, lowerI = im + base + span
                for j in 0..<span {
                    let wr = cosines[j], wi = sign * sines[j]
                    let xr = lowerR[j], xi = lowerI[j]
                    let tr = xr * wr - xi * wi
                    let ti = xr * wi + xi * wr
                    let ur = upperR[j], ui = upperI[j]
                    lowerR[j] = ur - tr; lowerI[j] = ui - ti
                    upperR[j] = ur + tr; upperI[j] = ui + ti
                }
                base += 2 * span
            }
            offset += span
            span *= 2
        }
    }
}
