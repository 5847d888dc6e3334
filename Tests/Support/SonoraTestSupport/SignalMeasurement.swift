#if canImport(Glibc)
import Glibc
#endif

/// Measurements the tests make on signals (Double accumulation; tests are not realtime).
public enum SignalMeasurement {
    /// Sum of squares.
    public static func energy<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        samples.reduce(0.0) { $0 + Double($1) * Double($1) }
    }

    public static func rms<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        (energy(samples) / Double(samples.count)).squareRoot()
    }

    /// The largest magnitude (0 for no samples).
    public static func peak<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        samples.reduce(0.0) { max($0, Double(abs($1))) }
    }

    /// The RMS level in dB relative to full scale (a full-scale square wave is 0 dBFS).
    public static func rmsDBFS<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        amplitudeDecibels(rms(samples))
    }

    /// The peak level in dB relative to full scale.
    public static func peakDBFS<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        amplitudeDecibels(peak(samples))
    }

    /// 10·log10 of a power (energy) ratio, floored at −300 dB instead of −∞.
    public static func decibels(_ powerRatio: Double) -> Double { 10 * log10(max(powerRatio, 1e-30)) }

    /// 20·log10 of an amplitude ratio, floored at −300 dB instead of −∞.
    public static func amplitudeDecibels(_ ratio: Double) -> Double { 20 * log10(max(ratio, 1e-15)) }

    /// Signal-to-noise ratio (dB) of `test` against `reference`: the reference's energy over
    /// the energy of their difference, over the common length.
    public static func snr<A: Collection, B: Collection>(reference: A, test: B) -> Double
    where A.Element == Float, B.Element == Float {
        var signal = 0.0, noise = 0.0
        for (a, b) in zip(reference, test) {
            signal += Double(a) * Double(a)
            noise += (Double(a) - Double(b)) * (Double(a) - Double(b))
        }
        return decibels(signal / max(noise, 1e-30))
    }

    /// The normalised correlation of two signals at lag 0 (1: same shape, −1: inverted).
    public static func correlation<A: Collection, B: Collection>(_ a: A, _ b: B) -> Double
    where A.Element == Float, B.Element == Float {
        var ab = 0.0, aa = 0.0, bb = 0.0
        for (x, y) in zip(a, b) {
            ab += Double(x) * Double(y)
            aa += Double(x) * Double(x)
            bb += Double(y) * Double(y)
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    /// The amplitude of the `frequency` component, by correlating with sine and cosine. Exact
    /// for a pure tone when the window holds a whole number of its cycles.
    public static func amplitude<C: Collection>(of samples: C, frequency: Double, sampleRate: Double) -> Double
    where C.Element == Float {
        var real = 0.0, imaginary = 0.0
        for (n, x) in samples.enumerated() {
            let angle = 2 * Double.pi * frequency * Double(n) / sampleRate
            real += Double(x) * cos(angle)
            imaginary += Double(x) * sin(angle)
        }
        return 2 * (real * real + imaginary * imaginary).squareRoot() / Double(samples.count)
    }

    /// Times (in fractional samples) of rising zero crossings, linearly interpolated.
    public static func risingCrossings(_ samples: [Float]) -> [Double] {
        var crossings: [Double] = []
        for n in 1..<samples.count where samples[n - 1] < 0 && samples[n] >= 0 {
            let before = Double(samples[n - 1]), after = Double(samples[n])
            crossings.append(Double(n - 1) + before / (before - after))
        }
        return crossings
    }

    /// Frequency from the rising crossings inside the window: cycles between the first and
    /// last crossing divided by the time between them.
    public static func frequency(of samples: [Float], sampleRate: Double) -> Double {
        let crossings = risingCrossings(samples)
        guard crossings.count >= 2 else { return 0 }
        return Double(crossings.count - 1) * sampleRate / (crossings.last! - crossings.first!)
    }

    /// The first index where two sample arrays differ (or their common length, if one is
    /// longer), nil when they are equal: a failure names one sample instead of printing both.
    public static func firstMismatch(_ actual: [Float], _ expected: [Float]) -> Int? {
        if let index = (0..<min(actual.count, expected.count)).first(where: { actual[$0] != expected[$0] }) {
            return index
        }
        return actual.count == expected.count ? nil : min(actual.count, expected.count)
    }

    /// Largest difference between two sets of channels from frame `start` on (∞ when their
    /// shapes differ); NaN equals NaN.
    public static func maximumDifference(_ a: [[Float]], _ b: [[Float]], from start: Int = 0) -> Float {
        guard a.count == b.count else { return .infinity }
        var worst: Float = 0
        for (x, y) in zip(a, b) {
            guard x.count == y.count else { return .infinity }
            for index in start..<x.count where !(x[index] == y[index] || (x[index].isNaN && y[index].isNaN)) {
                worst = max(worst, abs(x[index] - y[index]).isNaN ? .infinity : abs(x[index] - y[index]))
            }
        }
        return worst
    }
}
