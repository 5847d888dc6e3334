/// An in-place radix-2 complex FFT of a fixed power-of-two size, with its twiddle
/// factors and bit-reversal table computed once. Split real/imaginary arrays.
/// Used off the realtime thread (correlation for latency measurement) and by kernels
/// that pre-size it (block convolution).
public struct FFT: Sendable {
    public let size: Int
    private let log2Size: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let bitReversed: [Int32]

    /// `size` must be a power of two ≥ 2.
    public init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "FFT size must be a power of two")
        self.size = size
        log2Size = size.trailingZeroBitCount
        cosines = (0..<size / 2).map { Float(cos(2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<size / 2).map { Float(-sin(2 * Double.pi * Double($0) / Double(size))) }
        let bits = size.trailingZeroBitCount
        bitReversed = (0..<size).map { index in
            var reversed = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
            return Int32(reversed)
        }
    }

    /// Forward transform (e^{-iωt}) in place.
    public func forward(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        transform(real, imaginary, inverse: false)
    }

    /// Inverse transform in place, scaled by 1/size so `inverse(forward(x)) == x`.
    public func inverse(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        transform(real, imaginary, inverse: true)
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

    private func transform(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>, inverse: Bool) {
        bitReversed.withUnsafeBufferPointer { reversal in
            for index in 0..<size {
                let other = Int(reversal[index])
                if other > index {
                    swap(&re[index], &re[other])
                    swap(&im[index], &im[other])
                }
            }
        }
        cosines.withUnsafeBufferPointer { cosines in
            sines.withUnsafeBufferPointer { sines in
                var half = 1
                while half < size {
                    let step = size / (half * 2)
                    var start = 0
                    while start < size {
                        for k in 0..<half {
                            let wr = cosines[k * step]
                            let wi = inverse ? -sines[k * step] : sines[k * step]
                            let a = start + k
                            let b = a + half
                            let tr = re[b] * wr - im[b] * wi
                            let ti = re[b] * wi + im[b] * wr
                            re[b] = re[a] - tr
                            im[b] = im[a] - ti
                            re[a] += tr
                            im[a] += ti
                        }
                        start += half * 2
                    }
                    half *= 2
                }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
