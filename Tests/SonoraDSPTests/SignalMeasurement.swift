import Foundation

/// Helpers the tests use to measure signals (Foundation is fine here: tests are not realtime).
enum SignalMeasurement {
    /// A sine at `frequency`, computed in Double for every sample.
    static func sine(frequency: Double, sampleRate: Double, count: Int, amplitude: Double = 1) -> [Float] {
        (0..<count).map { Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / sampleRate)) }
    }

    /// The amplitude of the `frequency` component, by correlating with sine and cosine. Exact
    /// for a pure tone when the window holds a whole number of its cycles.
    static func amplitude<C: Collection>(of samples: C, frequency: Double, sampleRate: Double) -> Double
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
    static func risingCrossings(_ samples: [Float]) -> [Double] {
        var crossings: [Double] = []
        for n in 1..<samples.count where samples[n - 1] < 0 && samples[n] >= 0 {
            let before = Double(samples[n - 1]), after = Double(samples[n])
            crossings.append(Double(n - 1) + before / (before - after))
        }
        return crossings
    }

    /// Frequency from the rising crossings inside the window: cycles between the first and
    /// last crossing divided by the time between them.
    static func frequency(of samples: [Float], sampleRate: Double) -> Double {
        let crossings = risingCrossings(samples)
        guard crossings.count >= 2 else { return 0 }
        return Double(crossings.count - 1) * sampleRate / (crossings.last! - crossings.first!)
    }

    static func rms<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    /// The first index where two sample arrays differ (or their common length, if one is
    /// longer), nil when they are equal: a failure names one sample instead of printing both.
    static func firstMismatch(_ actual: [Float], _ expected: [Float]) -> Int? {
        if let index = (0..<min(actual.count, expected.count)).first(where: { actual[$0] != expected[$0] }) {
            return index
        }
        return actual.count == expected.count ? nil : min(actual.count, expected.count)
    }
}
