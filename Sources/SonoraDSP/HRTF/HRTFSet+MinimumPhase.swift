#if canImport(Glibc)
import Glibc
#endif

extension HRTFSet {
    /// A compact copy for cheap rendering, as OpenAL Soft's own sets are made: each response
    /// becomes its minimum-phase version (the same magnitude, its energy packed at the start;
    /// real cepstrum, folded) cut to `taps` samples with a short fade-out, placed after its
    /// onset delay (the first sample reaching a tenth of that ear's peak), so the interaural
    /// time difference stays. Responses of at most `HRTFKernel.timeDomainLimit` taps past
    /// their delay are rendered in the time domain, which is cheaper than FFTs at that length.
    public func minimumPhase(taps: Int = 32) -> HRTFSet {
        let taps = max(4, taps)
        var size = 64
        while size < 4 * filterLength { size <<= 1 }
        let fft = FFT(size: size)
        var onsets: [[Int]] = []
        var shapes: [[[Float]]] = []
        for measurement in measurements {
            var pair: [[Float]] = [], delays: [Int] = []
            for response in [measurement.left, measurement.right] {
                let peak = response.map(abs).max() ?? 0
                delays.append(peak > 0 ? response.firstIndex { abs($0) >= 0.1 * peak } ?? 0 : 0)
                pair.append(Self.minimumPhase(of: response, fft: fft, taps: taps))
            }
            onsets.append(delays)
            shapes.append(pair)
        }
        let longestDelay = onsets.flatMap { $0 }.max() ?? 0
        let length = longestDelay + taps
        let compact = measurements.indices.map { index in
            let ears = (0..<2).map { ear in
                var response = [Float](repeating: 0, count: length)
                for tap in 0..<taps { response[onsets[index][ear] + tap] = shapes[index][ear][tap] }
                return response
            }
            return HRTFMeasurement(azimuth: measurements[index].azimuth, elevation: measurements[index].elevation, left: ears[0], right: ears[1])
        }
        // Same rate, directions and finite samples as self: cannot fail.
        return try! HRTFSet(sampleRate: sampleRate, filterLength: length, measurements: compact)
    }

    /// The first `taps` samples of the minimum-phase response with `response`'s magnitude.
    private static func minimumPhase(of response: [Float], fft: FFT, taps: Int) -> [Float] {
        let size = fft.size
        var real = [Float](repeating: 0, count: size), imaginary = real
        for (index, value) in response.enumerated() { real[index] = value }
        fft.forward(real: &real, imaginary: &imaginary)
        // Real cepstrum of the log magnitude (floored: a zero would be −∞).
        for k in 0..<size {
            let magnitude = (real[k] * real[k] + imaginary[k] * imaginary[k]).squareRoot()
            real[k] = logf(max(magnitude, 1e-7))
            imaginary[k] = 0
        }
        fft.inverse(real: &real, imaginary: &imaginary)
        // Fold onto the causal side: the minimum-phase response's cepstrum.
        for n in 1..<size / 2 { real[n] *= 2 }
        for n in (size / 2 + 1)..<size { real[n] = 0 }
        for n in 0..<size { imaginary[n] = 0 }
        fft.forward(real: &real, imaginary: &imaginary)
        for k in 0..<size {
            let scale = expf(real[k])
            let phase = imaginary[k]
            real[k] = scale * cosf(phase)
            imaginary[k] = scale * sinf(phase)
        }
        fft.inverse(real: &real, imaginary: &imaginary)
        // Cut with a half-cosine fade over the last quarter, so the cut adds no edge.
        let fade = max(1, taps / 4)
        return (0..<taps).map { n in
            let position = n - (taps - fade)
            let gain: Float = position < 0 ? 1 : 0.5 * (1 + cosf(Float.pi * Float(position + 1) / Float(fade + 1)))
            return real[n] * gain
        }
    }
}
