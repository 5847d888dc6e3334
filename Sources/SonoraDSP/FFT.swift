#if canImport(Glibc)
import Glibc
#endif

/// An in-place radix-2 complex FFT of a fixed power-of-two size, on split real/imaginary
/// arrays. Sonora's one FFT: `RealFFT` runs its real-input transforms through it (the echo
/// canceller's hot path, measured faster than KissFFT by `sonora-bench voice`), and the
/// delay estimator's correlation uses it directly. Twiddles are laid out stage by stage so
/// each butterfly pass reads them contiguously; everything is allocated at init and the
/// transforms allocate nothing. It keeps no scratch state, so one instance may be shared.
public final class FFT: @unchecked Sendable {
    public let size: Int
    /// Per-stage twiddles e^{-iπj/h} of the stage with span h, h values each (1 + 2 + … + size/2).
    private let stageCos: UnsafeMutablePointer<Float>
    private let stageSin: UnsafeMutablePointer<Float>
    /// The bit-reversal permutation of 0..<size.
    let reversal: UnsafeMutablePointer<Int32>

    /// `size` must be a power of two ≥ 2.
    public init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "FFT size must be a power of two")
        self.size = size
        stageCos = .allocate(capacity: size)
        stageSin = .allocate(capacity: size)
        var offset = 0
        var span = 1
        while span < size {
            for j in 0..<span {
                let angle = -Double.pi * Double(j) / Double(span)
                stageCos[offset + j] = Float(cos(angle))
                stageSin[offset + j] = Float(sin(angle))
            }
            offset += span
            span *= 2
        }
        reversal = .allocate(capacity: size)
        let bits = size.trailingZeroBitCount
        for index in 0..<size {
            var reversed = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
            reversal[index] = Int32(reversed)
        }
    }

    deinit {
        stageCos.deallocate(); stageSin.deallocate()
        reversal.deallocate()
    }

    /// Forward transform (e^{-iωt}) in place, unscaled.
    public func forward(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        permute(real, imaginary)
        butterflies(real, imaginary, conjugate: false)
    }

    /// Inverse transform in place, scaled by 1/size so `inverse(forward(x)) == x`.
    public func inverse(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        permute(real, imaginary)
        butterflies(real, imaginary, conjugate: true)
        let scale = 1 / Float(size)
        for index in 0..<size {
            real[index] *= scale
            imaginary[index] *= scale
        }
    }

    public func forward(real: inout [Float], imaginary: inout [Float]) {
        precondition(real.count == size && imaginary.count == size, "FFT buffers must have \(size) values")
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in forward(real: re.baseAddress!, imaginary: im.baseAddress!) }
        }
    }

    public func inverse(real: inout [Float], imaginary: inout [Float]) {
        precondition(real.count == size && imaginary.count == size, "FFT buffers must have \(size) values")
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in inverse(real: re.baseAddress!, imaginary: im.baseAddress!) }
        }
    }

    /// Puts the values in bit-reversed order, in place.
    private func permute(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>) {
        for index in 0..<size {
            let other = Int(reversal[index])
            if other > index {
                swap(&re[index], &re[other])
                swap(&im[index], &im[other])
            }
        }
    }

    /// Radix-2 decimation-in-time passes over bit-reversed values, in place; `conjugate`
    /// turns the twiddles round for the (unscaled) inverse.
    @inline(__always)
    func butterflies(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>, conjugate: Bool) {
        // The first two passes (spans 1 and 2) as one radix-4 pass: their twiddles are 1 and
        // ∓i, so no multiplications, and one trip through memory instead of two scalar ones.
        var offset = 1
        var span = 2
        if size >= 4 {
            var start = 0
            while start < size {
                let a0r = re[start], a0i = im[start], a1r = re[start + 1], a1i = im[start + 1]
                let a2r = re[start + 2], a2i = im[start + 2], a3r = re[start + 3], a3i = im[start + 3]
                let b0r = a0r + a1r, b0i = a0i + a1i, b1r = a0r - a1r, b1i = a0i - a1i
                let b2r = a2r + a3r, b2i = a2i + a3i, b3r = a2r - a3r, b3i = a2i - a3i
                // b3 · (−i) forward, b3 · (+i) inverse.
                let tr = conjugate ? -b3i : b3i, ti = conjugate ? b3r : -b3r
                re[start] = b0r + b2r; im[start] = b0i + b2i
                re[start + 2] = b0r - b2r; im[start + 2] = b0i - b2i
                re[start + 1] = b1r + tr; im[start + 1] = b1i + ti
                re[start + 3] = b1r - tr; im[start + 3] = b1i - ti
                start += 4
            }
            offset = 3
            span = 4
        } else {
            let ar = re[0], ai = im[0], br = re[1], bi = im[1]
            re[0] = ar + br; im[0] = ai + bi
            re[1] = ar - br; im[1] = ai - bi
        }
        let sign: Float = conjugate ? -1 : 1
        while span < size {
            let cosines = stageCos + offset, sines = stageSin + offset
            var base = 0
            while base < size {
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
