import Foundation

/// Reverberation measured from an impulse response, by Schroeder's backward integration.
public enum DecayMeasurement {
    /// Energy decay curve in dB (0 at the start, falling), of the sum of `channels`' energies.
    public static func energyDecayCurve(_ channels: [[Float]]) -> [Double] {
        let count = channels.map(\.count).min() ?? 0
        var curve = [Double](repeating: 0, count: count)
        var total = 0.0
        for index in stride(from: count - 1, through: 0, by: -1) {
            for channel in channels { total += Double(channel[index]) * Double(channel[index]) }
            curve[index] = total
        }
        guard let first = curve.first, first > 0 else { return curve.map { _ in -.infinity } }
        return curve.map { 10 * log10(max($0, 1e-300) / first) }
    }

    /// The 60 dB decay time (seconds) extrapolated from the curve's fall between −5 dB and
    /// −5 − `range` dB (T20: range 20, T30: range 30); nil if the curve never falls that far.
    public static func decayTime(_ channels: [[Float]], sampleRate: Double, range: Double = 20) -> Double? {
        let curve = energyDecayCurve(channels)
        guard let start = curve.firstIndex(where: { $0 <= -5 }),
            let end = curve.firstIndex(where: { $0 <= -5 - range })
        else { return nil }
        return Double(end - start) / sampleRate * 60 / range
    }

    /// Total energy of `channels` (the sum of every sample's square).
    public static func energy(_ channels: [[Float]]) -> Double {
        channels.reduce(0) { sum, channel in channel.reduce(sum) { $0 + Double($1) * Double($1) } }
    }
}
